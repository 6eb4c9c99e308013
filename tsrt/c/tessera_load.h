/* tessera_load.h: load a model built by tessera's `tune build` at run time,
 * after checking its library, from C or C++. Header-only; link with -ldl on
 * glibc older than 2.34.
 *
 * The dynamic loader trusts the file it maps: a libmodel.so cut short (a
 * copy that failed half-way) kills the process with SIGBUS inside dlopen,
 * and one built for another architecture fails with "No such file or
 * directory". tessera_load checks the file first, as the Go and Python
 * packages do:
 *
 *   - it exists (TESSERA_NOT_FOUND);
 *   - it is an ELF shared library of this process's class, byte order and
 *     machine (TESSERA_UNSUPPORTED_CPU for another architecture), with
 *     every loaded segment inside the file (TESSERA_BAD_LIBRARY);
 *   - when the manifest.json beside it names it: its size and SHA-256 are
 *     those the build recorded (TESSERA_BAD_LIBRARY: damaged or replaced);
 *
 * then loads it (dlopen, RTLD_NOW | RTLD_LOCAL), finds every function of
 * tessera.h and checks its ABI version (TESSERA_ABI_MISMATCH).
 *
 *   tessera_api api;
 *   char why[512];
 *   tessera_model *m;
 *   if (tessera_load("build/resnet18", &api, why, sizeof why) != TESSERA_OK) {
 *     fprintf(stderr, "%s\n", why);
 *     return 1;
 *   }
 *   if (api.open(TESSERA_ABI_VERSION, "build/resnet18", &m) != TESSERA_OK)
 *     fprintf(stderr, "%s\n", api.last_error());
 *
 * The library stays loaded (its OpenMP threads may outlive a model).
 */
#ifndef TESSERA_LOAD_H
#define TESSERA_LOAD_H

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tessera.h"

/* The functions of tessera.h, from a loaded library. */
typedef struct tessera_api {
  void *handle; /* dlopen's */
  uint32_t (*abi_version)(void);
  tessera_status (*open)(uint32_t, const char *, tessera_model **);
  void (*close)(tessera_model *);
  int32_t (*num_inputs)(const tessera_model *);
  int32_t (*num_outputs)(const tessera_model *);
  tessera_status (*input_info)(const tessera_model *, int32_t, const char **, tessera_dtype *, int32_t *, const int64_t **);
  tessera_status (*output_info)(const tessera_model *, int32_t, const char **, tessera_dtype *, int32_t *, const int64_t **);
  tessera_status (*batch_range)(const tessera_model *, const char **, int64_t *, int64_t *);
  tessera_status (*dim_range)(const tessera_model *, const char **, int64_t *, int64_t *);
  tessera_status (*run)(tessera_model *, const tessera_tensor *, int32_t, const tessera_tensor *, int32_t);
  tessera_status (*run_named)(tessera_model *, const tessera_tensor *, int32_t, const tessera_tensor *, int32_t);
  tessera_status (*set_num_threads)(tessera_model *, int32_t);
  int32_t (*num_steps)(const tessera_model *);
  const char *(*step_name)(const tessera_model *, int32_t);
  tessera_status (*profile)(tessera_model *, double *, int32_t);
  const char *(*target)(const tessera_model *);
  const char *(*last_error)(void);
  const char *(*status_name)(tessera_status);
} tessera_api;

static tessera_status tessera_load_fail_(char *why, size_t n, tessera_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), unused));
static tessera_status tessera_load_fail_(char *why, size_t n, tessera_status st, const char *fmt, ...) {
  if (why && n > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
  }
  return st;
}

/* SHA-256 (FIPS 180-4), for the manifest's digest of the library. */
typedef struct {
  uint32_t h[8];
  uint64_t bytes;
  unsigned char block[64];
  size_t used;
} tessera_sha256_;

static void tessera_sha256_block_(uint32_t h[8], const unsigned char *p) {
  static const uint32_t k[64] = {
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01,
      0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
      0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
      0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
      0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08,
      0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
      0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
#define TESSERA_ROR_(x, r) (((x) >> (r)) | ((x) << (32 - (r))))
  uint32_t w[64];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = TESSERA_ROR_(w[i - 15], 7) ^ TESSERA_ROR_(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = TESSERA_ROR_(w[i - 2], 17) ^ TESSERA_ROR_(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; i++) {
    uint32_t t1 = hh + (TESSERA_ROR_(e, 6) ^ TESSERA_ROR_(e, 11) ^ TESSERA_ROR_(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
    uint32_t t2 = (TESSERA_ROR_(a, 2) ^ TESSERA_ROR_(a, 13) ^ TESSERA_ROR_(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
  }
#undef TESSERA_ROR_
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

static void tessera_sha256_init_(tessera_sha256_ *s) {
  static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(s->h, h0, sizeof h0);
  s->bytes = 0;
  s->used = 0;
}

static void tessera_sha256_add_(tessera_sha256_ *s, const unsigned char *p, size_t n) {
  s->bytes += n;
  while (n > 0) {
    size_t take = 64 - s->used < n ? 64 - s->used : n;
    memcpy(s->block + s->used, p, take);
    s->used += take, p += take, n -= take;
    if (s->used == 64) {
      tessera_sha256_block_(s->h, s->block);
      s->used = 0;
    }
  }
}

/* tessera_sha256_hex_ ends the digest and writes it as 64 hex digits and a NUL. */
static void tessera_sha256_hex_(tessera_sha256_ *s, char hex[65]) {
  uint64_t bits = s->bytes * 8;
  unsigned char pad = 0x80, zero = 0, len[8];
  tessera_sha256_add_(s, &pad, 1);
  while (s->used != 56)
    tessera_sha256_add_(s, &zero, 1);
  for (int i = 0; i < 8; i++)
    len[i] = (unsigned char)(bits >> (56 - 8 * i));
  tessera_sha256_add_(s, len, 8);
  for (int i = 0; i < 8; i++)
    snprintf(hex + 8 * i, 9, "%08x", s->h[i]);
}

/* tessera_manifest_value_ finds "key": in the JSON text and copies its
   value (a string's contents, or a number) into out; 0 if absent. The
   manifest's top-level keys are unique, and the key's quoted form cannot
   occur inside a JSON string, whose quotes are escaped. */
static int tessera_manifest_value_(const char *json, const char *key, char *out, size_t n) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\"", key);
  const char *p = strstr(json, pat);
  if (!p)
    return 0;
  p += strlen(pat);
  while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
    p++;
  if (*p++ != ':')
    return 0;
  while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
    p++;
  int quoted = *p == '"';
  p += quoted;
  size_t i = 0;
  while (*p && i + 1 < n && (quoted ? *p != '"' : (*p != ',' && *p != '}' && *p != '\n' && *p != ' ')))
    out[i++] = *p++;
  out[i] = 0;
  return 1;
}

/* tessera_verify_library checks the library file at lib before it is
   loaded (see the top of this file). It returns TESSERA_OK, or a status
   and, in why (n bytes), what is wrong. */
static tessera_status tessera_verify_library(const char *lib, char *why, size_t n) __attribute__((unused));
static tessera_status tessera_verify_library(const char *lib, char *why, size_t n) {
#if defined(__x86_64__)
  const unsigned machine = EM_X86_64;
  const char *arch = "x86-64";
#elif defined(__aarch64__)
  const unsigned machine = EM_AARCH64;
  const char *arch = "aarch64";
#else
  const unsigned machine = 0;
  const char *arch = "this architecture";
#endif
  int fd = open(lib, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return tessera_load_fail_(why, n, errno == ENOENT ? TESSERA_NOT_FOUND : TESSERA_BAD_LIBRARY, "%s: %s", lib, strerror(errno));
  struct stat st;
  Elf64_Ehdr eh;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return tessera_load_fail_(why, n, TESSERA_BAD_LIBRARY, "%s: not a regular file", lib);
  }
  uint64_t size = (uint64_t)st.st_size;
  if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    close(fd);
    return tessera_load_fail_(why, n, TESSERA_BAD_LIBRARY, "%s: not an ELF shared library (%llu bytes): truncated or damaged? rebuild it or copy it again",
                              lib, (unsigned long long)size);
  }
  if (machine && eh.e_machine != machine) {
    close(fd);
    return tessera_load_fail_(why, n, TESSERA_UNSUPPORTED_CPU, "%s is built for %s (ELF machine %u); this process runs on %s: build the model for this machine",
                              lib, eh.e_machine == EM_AARCH64 ? "aarch64" : eh.e_machine == EM_X86_64 ? "x86-64" : "another architecture",
                              eh.e_machine, arch);
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_type != ET_DYN ||
      eh.e_phentsize != sizeof(Elf64_Phdr)) {
    close(fd);
    return tessera_load_fail_(why, n, TESSERA_BAD_LIBRARY, "%s: not a 64-bit little-endian ELF shared library", lib);
  }
  if (eh.e_shoff > size || (uint64_t)eh.e_shnum * eh.e_shentsize > size - eh.e_shoff) {
    close(fd);
    return tessera_load_fail_(why, n, TESSERA_BAD_LIBRARY, "%s: %llu bytes, too short for its section headers: truncated (rebuild it or copy it again)",
                              lib, (unsigned long long)size);
  }
  if (eh.e_phoff > size || (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > size - eh.e_phoff) {
    close(fd);
    return tessera_load_fail_(why, n, TESSERA_BAD_LIBRARY, "%s: %llu bytes, too short for its program headers: truncated (rebuild it or copy it again)",
                              lib, (unsigned long long)size);
  }
  for (int i = 0; i < eh.e_phnum; i++) {
    Elf64_Phdr ph;
    if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) != (ssize_t)sizeof ph) {
      close(fd);
      return tessera_load_fail_(why, n, TESSERA_BAD_LIBRARY, "%s: cannot read program header %d", lib, i);
    }
    if ((ph.p_type == PT_LOAD || ph.p_type == PT_DYNAMIC) && (ph.p_offset > size || ph.p_filesz > size - ph.p_offset)) {
      close(fd);
      return tessera_load_fail_(why, n, TESSERA_BAD_LIBRARY, "%s: %llu bytes, but its segment %d reaches byte %llu: truncated (rebuild it or copy it again)",
                                lib, (unsigned long long)size, i, (unsigned long long)(ph.p_offset + ph.p_filesz));
    }
  }

  /* The manifest beside it, if there is one that names it. */
  char path[4096];
  const char *slash = strrchr(lib, '/');
  const char *base = slash ? slash + 1 : lib;
  int dirlen = slash ? (int)(slash - lib) : 1;
  if (snprintf(path, sizeof path, "%.*s/manifest.json", dirlen, slash ? lib : ".") >= (int)sizeof path) {
    close(fd);
    return tessera_load_fail_(why, n, TESSERA_INVALID_ARGUMENT, "%s: path too long", lib);
  }
  FILE *mf = fopen(path, "rb");
  if (!mf) {
    close(fd);
    return TESSERA_OK;
  }
  char *json = NULL;
  long mlen = -1;
  if (fseek(mf, 0, SEEK_END) == 0 && (mlen = ftell(mf)) >= 0 && mlen < (64L << 20) && fseek(mf, 0, SEEK_SET) == 0 &&
      (json = (char *)malloc((size_t)mlen + 1)) && fread(json, 1, (size_t)mlen, mf) == (size_t)mlen)
    json[mlen] = 0;
  else {
    free(json);
    json = NULL;
  }
  fclose(mf);
  if (!json) {
    close(fd);
    return tessera_load_fail_(why, n, TESSERA_BAD_LIBRARY, "%s: cannot read it", path);
  }
  /* A manifest is a JSON object: a file cut short or overwritten is not
     one, and cannot be trusted to name the library or not. */
  const char *first = json, *last = json + mlen;
  while (*first == ' ' || *first == '\n' || *first == '\t' || *first == '\r')
    first++;
  while (last > first && (last[-1] == ' ' || last[-1] == '\n' || last[-1] == '\t' || last[-1] == '\r'))
    last--;
  if (*first != '{' || last == first || last[-1] != '}' || strlen(json) != (size_t)mlen) {
    free(json);
    close(fd);
    return tessera_load_fail_(why, n, TESSERA_BAD_LIBRARY, "%s: not a JSON object (a damaged manifest: rebuild the model)", path);
  }
  char name[256], bytes[32], want[80];
  int named = tessera_manifest_value_(json, "library", name, sizeof name) && strcmp(name, base) == 0;
  int recorded = tessera_manifest_value_(json, "library_bytes", bytes, sizeof bytes) &&
                 tessera_manifest_value_(json, "library_sha256", want, sizeof want);
  free(json);
  if (!named) {
    close(fd);
    return TESSERA_OK;
  }
  if (!recorded) {
    close(fd);
    return tessera_load_fail_(why, n, TESSERA_BAD_LIBRARY, "%s records no size or SHA-256 of %s: built by an older tune (rebuild the model)", path, base);
  }
  if (strtoull(bytes, NULL, 10) != size) {
    close(fd);
    return tessera_load_fail_(why, n, TESSERA_BAD_LIBRARY, "%s is %llu bytes, the build wrote %s (truncated, or replaced since the build: rebuild it or copy it again)",
                              lib, (unsigned long long)size, bytes);
  }
  tessera_sha256_ s;
  tessera_sha256_init_(&s);
  unsigned char buf[1 << 16];
  uint64_t off = 0;
  while (off < size) {
    ssize_t got = pread(fd, buf, sizeof buf, (off_t)off);
    if (got <= 0) {
      close(fd);
      return tessera_load_fail_(why, n, TESSERA_BAD_LIBRARY, "%s: read failed at byte %llu", lib, (unsigned long long)off);
    }
    tessera_sha256_add_(&s, buf, (size_t)got);
    off += (uint64_t)got;
  }
  close(fd);
  char got[65];
  tessera_sha256_hex_(&s, got);
  if (strcmp(got, want) != 0)
    return tessera_load_fail_(why, n, TESSERA_BAD_LIBRARY, "%s has SHA-256 %.16s..., the build wrote %.16s... (damaged, or changed since the build: rebuild it or copy it again)",
                              lib, got, want);
  return TESSERA_OK;
}

/* tessera_load checks and loads the library of the model at path (its
   build folder, or its library file) and fills api with its functions. It
   returns TESSERA_OK, or a status and, in why (n bytes), what is wrong. */
static tessera_status tessera_load(const char *path, tessera_api *api, char *why, size_t n) __attribute__((unused));
static tessera_status tessera_load(const char *path, tessera_api *api, char *why, size_t n) {
  if (!path || !api)
    return tessera_load_fail_(why, n, TESSERA_INVALID_ARGUMENT, "tessera_load: %s is NULL", !path ? "path" : "api");
  memset(api, 0, sizeof *api);
  struct stat st;
  if (stat(path, &st) != 0)
    return tessera_load_fail_(why, n, errno == ENOENT || errno == ENOTDIR ? TESSERA_NOT_FOUND : TESSERA_INVALID_ARGUMENT,
                              "tessera_load: %s: %s (no model folder or library there)", path, strerror(errno));
  char lib[4096];
  if (snprintf(lib, sizeof lib, "%s%s", path, S_ISDIR(st.st_mode) ? "/libmodel.so" : "") >= (int)sizeof lib)
    return tessera_load_fail_(why, n, TESSERA_INVALID_ARGUMENT, "tessera_load: %s: path too long", path);
  tessera_status s = tessera_verify_library(lib, why, n);
  if (s != TESSERA_OK)
    return s;
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return tessera_load_fail_(why, n, TESSERA_BAD_LIBRARY, "tessera_load: %s", dlerror());
  struct {
    const char *name;
    void **fn;
  } syms[] = {
      {"tessera_abi_version", (void **)&api->abi_version}, {"tessera_open", (void **)&api->open},
      {"tessera_close", (void **)&api->close}, {"tessera_num_inputs", (void **)&api->num_inputs},
      {"tessera_num_outputs", (void **)&api->num_outputs}, {"tessera_input_info", (void **)&api->input_info},
      {"tessera_output_info", (void **)&api->output_info}, {"tessera_batch_range", (void **)&api->batch_range},
      {"tessera_dim_range", (void **)&api->dim_range}, {"tessera_run", (void **)&api->run},
      {"tessera_run_named", (void **)&api->run_named}, {"tessera_set_num_threads", (void **)&api->set_num_threads},
      {"tessera_num_steps", (void **)&api->num_steps}, {"tessera_step_name", (void **)&api->step_name},
      {"tessera_profile", (void **)&api->profile}, {"tessera_target", (void **)&api->target},
      {"tessera_last_error", (void **)&api->last_error}, {"tessera_status_name", (void **)&api->status_name},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
    if (!(*syms[i].fn = dlsym(h, syms[i].name)))
      return tessera_load_fail_(why, n, TESSERA_ABI_MISMATCH, "tessera_load: %s has no %s: not a model built by tune build with ABI version %d (rebuild it)",
                                lib, syms[i].name, TESSERA_ABI_VERSION);
  if (api->abi_version() != TESSERA_ABI_VERSION)
    return tessera_load_fail_(why, n, TESSERA_ABI_MISMATCH, "tessera_load: %s implements ABI version %u, this program was compiled against version %d",
                              lib, api->abi_version(), TESSERA_ABI_VERSION);
  api->handle = h;
  return TESSERA_OK;
}

#endif
