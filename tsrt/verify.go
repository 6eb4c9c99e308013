package tsrt

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// Checking a library before it is loaded.
//
// The dynamic loader trusts the file it maps: a library cut short (a
// copy that failed half-way) maps without complaint and kills the
// process with SIGBUS when a page past the end is touched, often inside
// dlopen itself; a library built for another architecture fails with a
// misleading "No such file or directory". So Open reads the file first:
//
//	libmodel.so ──ELF header (debug/elf): class, byte order, machine,
//	│             every segment inside the file──▶ TESSERA_BAD_LIBRARY,
//	│             TESSERA_UNSUPPORTED_CPU (another architecture)
//	└─ manifest.json beside it, when there is one: the library's size and
//	   SHA-256 as the build wrote them──▶ TESSERA_BAD_LIBRARY (damaged or
//	   replaced since the build)
//
// A library copied alone (a --single-file build) has no manifest beside
// it: its ELF structure is still checked, and the weights inside it are
// checked by the library itself (their checksum) when it opens.

// LibraryRecord is what a build folder's manifest says of its library:
// the fields of manifest.json the loaders read before loading it
// (package assemble writes them).
type LibraryRecord struct {
	Library string `json:"library"`        // the file's name in the folder
	Bytes   int64  `json:"library_bytes"`  // its size
	SHA256  string `json:"library_sha256"` // its SHA-256, in hex
}

// LibraryDigest returns the size and SHA-256 of a library's bytes as a
// manifest records them.
func LibraryDigest(lib []byte) (int64, string) {
	sum := sha256.Sum256(lib)
	return int64(len(lib)), hex.EncodeToString(sum[:])
}

// elfMachines are the ELF machines of the architectures Go runs on that a
// model can be built for.
var elfMachines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "arm": elf.EM_ARM,
	"riscv64": elf.EM_RISCV, "ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "loong64": elf.EM_LOONGARCH,
}

// archNames names ELF machines for messages.
var archNames = map[elf.Machine]string{
	elf.EM_X86_64: "x86-64", elf.EM_AARCH64: "aarch64", elf.EM_386: "i386", elf.EM_ARM: "32-bit ARM",
	elf.EM_RISCV: "RISC-V", elf.EM_PPC64: "ppc64", elf.EM_S390: "s390x", elf.EM_LOONGARCH: "LoongArch",
}

func archName(m elf.Machine) string {
	if n, ok := archNames[m]; ok {
		return n
	}
	return m.String()
}

// VerifyLibrary checks the library file at path before it is loaded: that
// it exists (TESSERA_NOT_FOUND), that it is a whole ELF shared library of
// this process's architecture (TESSERA_BAD_LIBRARY, TESSERA_UNSUPPORTED_CPU),
// and, when a manifest.json beside it names it, that its size and SHA-256
// are the build's (TESSERA_BAD_LIBRARY). The errors are *Error.
func VerifyLibrary(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &Error{Status: NotFound, Msg: fmt.Sprintf("tessera: %s: no such file (not a build folder, or its library is missing)", path)}
		}
		return &Error{Status: BadLibrary, Msg: fmt.Sprintf("tessera: %v", err)}
	}
	if !fi.Mode().IsRegular() {
		return &Error{Status: BadLibrary, Msg: fmt.Sprintf("tessera: %s is not a regular file", path)}
	}
	if err := checkELF(path, fi.Size()); err != nil {
		return err
	}
	return checkDigest(path, fi.Size())
}

// checkELF reads the ELF header of the library at path (size bytes).
func checkELF(path string, size int64) error {
	bad := func(format string, args ...any) error {
		return &Error{Status: BadLibrary, Msg: fmt.Sprintf("tessera: %s: ", path) + fmt.Sprintf(format, args...)}
	}
	f, err := elf.Open(path)
	if err != nil {
		return bad("not a whole ELF shared library (%v): truncated or damaged? rebuild it or copy it again", err)
	}
	defer f.Close()
	want, known := elfMachines[runtime.GOARCH]
	if known && f.Machine != want {
		return &Error{Status: UnsupportedCPU, Msg: fmt.Sprintf("tessera: %s is built for %s (ELF machine %s); this process runs on %s: build the model for this machine (tune build --cpu native), or run it in a child process under an emulator (OpenChild; package assemble: Emulate)",
			path, archName(f.Machine), f.Machine, archName(want))}
	}
	if f.Type != elf.ET_DYN {
		return bad("an ELF %s, not a shared library", f.Type)
	}
	if wantClass := elf.ELFCLASS64; runtime.GOARCH != "386" && runtime.GOARCH != "arm" && f.Class != wantClass {
		return bad("ELF %s, this process is 64-bit", f.Class)
	}
	if f.Data != elf.ELFDATA2LSB {
		return bad("ELF %s, this process is little-endian", f.Data)
	}
	for i, p := range f.Progs {
		if p.Type != elf.PT_LOAD && p.Type != elf.PT_DYNAMIC {
			continue
		}
		if p.Off > uint64(size) || p.Filesz > uint64(size)-p.Off {
			return bad("%d bytes, but its segment %d (%s) reaches byte %d: truncated (rebuild it or copy it again)", size, i, p.Type, p.Off+p.Filesz)
		}
	}
	return nil
}

// checkDigest compares the library at path (size bytes) with what the
// manifest beside it records, if there is a manifest that names it.
func checkDigest(path string, size int64) error {
	data, err := os.ReadFile(filepath.Join(filepath.Dir(path), ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &Error{Status: BadLibrary, Msg: fmt.Sprintf("tessera: %v", err)}
	}
	var rec LibraryRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return &Error{Status: BadLibrary, Msg: fmt.Sprintf("tessera: %s: %v (a damaged manifest: rebuild the model)", filepath.Join(filepath.Dir(path), ManifestFile), err)}
	}
	if rec.Library != filepath.Base(path) {
		return nil // the manifest is of another file (a library copied into a build folder under another name)
	}
	if rec.SHA256 == "" {
		return &Error{Status: BadLibrary, Msg: fmt.Sprintf("tessera: %s records no size or SHA-256 of %s: built by an older tune (rebuild the model)", filepath.Join(filepath.Dir(path), ManifestFile), rec.Library)}
	}
	if size != rec.Bytes {
		return &Error{Status: BadLibrary, Msg: fmt.Sprintf("tessera: %s is %d bytes, the build wrote %d (truncated, or replaced since the build: rebuild it or copy it again)", path, size, rec.Bytes)}
	}
	f, err := os.Open(path)
	if err != nil {
		return &Error{Status: BadLibrary, Msg: fmt.Sprintf("tessera: %v", err)}
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return &Error{Status: BadLibrary, Msg: fmt.Sprintf("tessera: %s: %v", path, err)}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != rec.SHA256 {
		return &Error{Status: BadLibrary, Msg: fmt.Sprintf("tessera: %s has SHA-256 %s, the build wrote %s (damaged, or changed since the build: rebuild it or copy it again)", path, got[:16]+"…", rec.SHA256[:min(16, len(rec.SHA256))]+"…")}
	}
	return nil
}
