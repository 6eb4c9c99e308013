package tsrt_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/tessera-ml/tessera/tsrt"
)

// The fuzz targets of the runtime's hostile suite: a manifest beside an
// intact library, and the tensor descriptors of a run. Their seed corpora
// are in testdata/fuzz (committed); `go test -fuzz=FuzzManifest` and
// `go test -fuzz=FuzzRunTensors` grow them. Neither may crash, hang or
// succeed where it must fail.

// fuzzModel is one build of the tiny model shared by the fuzz targets'
// iterations (building takes a second).
var fuzzModel = struct {
	once sync.Once
	dir  string
	err  error
}{}

func tinyForFuzz(f *testing.F) string {
	fuzzModel.once.Do(func() {
		dir, err := os.MkdirTemp("", "tessera-fuzz-")
		if err != nil {
			fuzzModel.err = err
			return
		}
		src := buildTiny(f)
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			fuzzModel.err = err
			return
		}
		fuzzModel.dir = dir
	})
	if fuzzModel.err != nil {
		f.Fatal(fuzzModel.err)
	}
	return fuzzModel.dir
}

// FuzzManifest puts arbitrary bytes where a build folder's manifest.json
// goes, beside an intact library, and opens the folder: it must open (and
// run) only when the manifest does not contradict the library (none that
// names it, or one that records its size and SHA-256), and otherwise fail
// with TESSERA_BAD_LIBRARY; never crash.
func FuzzManifest(f *testing.F) {
	src := tinyForFuzz(f)
	good, err := os.ReadFile(filepath.Join(src, tsrt.ManifestFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(`{"library": "libmodel.so"}`))
	f.Add([]byte(`{"library": "libmodel.so", "library_bytes": 1, "library_sha256": "00"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte{})
	lib, err := os.ReadFile(filepath.Join(src, tsrt.LibraryFile))
	if err != nil {
		f.Fatal(err)
	}
	bytes, sum := tsrt.LibraryDigest(lib)
	f.Fuzz(func(t *testing.T, manifest []byte) {
		dir := t.TempDir()
		for _, name := range []string{tsrt.LibraryFile, "weights.bin"} {
			data, err := os.ReadFile(filepath.Join(src, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, tsrt.ManifestFile), manifest, 0o644); err != nil {
			t.Fatal(err)
		}
		err := tsrt.VerifyLibrary(filepath.Join(dir, tsrt.LibraryFile))
		var rec tsrt.LibraryRecord
		parsed := jsonObject(manifest, &rec)
		trusted := parsed && (rec.Library != tsrt.LibraryFile || (rec.Bytes == bytes && rec.SHA256 == sum))
		switch {
		case err == nil && !trusted:
			t.Fatalf("a library was accepted beside a manifest that contradicts it: %q", manifest)
		case err != nil && trusted:
			t.Fatalf("a library was refused beside a manifest that agrees with it (%q): %v", manifest, err)
		case err != nil && !errors.Is(err, &tsrt.Error{Status: tsrt.BadLibrary}):
			t.Fatalf("refused with another status than TESSERA_BAD_LIBRARY: %v", err)
		}
	})
}

// FuzzRunTensors runs the tiny model with an input tensor whose dtype,
// shape and data length are arbitrary: the run succeeds only for the
// model's dtype and shape with enough data, and otherwise fails with a
// status; never crashes or writes outside the buffers.
func FuzzRunTensors(f *testing.F) {
	m, err := tsrt.Open(tinyForFuzz(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { m.Close() })
	in := m.Inputs()[0]
	shapeBytes := func(s []int64) []byte {
		var b []byte
		for _, d := range s {
			b = binary.LittleEndian.AppendUint64(b, uint64(d))
		}
		return b
	}
	f.Add(int32(in.DType), shapeBytes(in.Shape), uint32(in.Elems()*4), false)
	f.Add(int32(tsrt.Int64), shapeBytes(in.Shape), uint32(in.Elems()*8), false)
	f.Add(int32(in.DType), shapeBytes([]int64{-1, 3, 16, 16}), uint32(100), false)
	f.Add(int32(in.DType), shapeBytes([]int64{1 << 62, 1 << 62}), uint32(0), true)
	f.Add(int32(99), []byte{}, uint32(4), false)
	f.Fuzz(func(t *testing.T, dtype int32, shape []byte, dataLen uint32, badName bool) {
		dims := make([]int64, len(shape)/8)
		for i := range dims {
			dims[i] = int64(binary.LittleEndian.Uint64(shape[8*i:]))
		}
		data := make([]byte, dataLen%(1<<20))
		x := tsrt.Tensor{DType: tsrt.DType(dtype), Shape: dims, Data: data}
		if badName {
			x.Name = in.Name + "_"
		}
		o := m.Outputs()[0]
		guard := 64
		outBuf := make([]byte, o.Elems()*o.DType.Size()+guard)
		for i := range outBuf {
			outBuf[i] = 0xA5
		}
		out := tsrt.Tensor{DType: o.DType, Shape: o.Shape, Data: outBuf[:len(outBuf)-guard]}
		err := m.RunInto(context.Background(), []tsrt.Tensor{x}, []tsrt.Tensor{out})
		valid := x.DType == in.DType && slices.Equal(dims, in.Shape) && len(data) >= in.Elems()*in.DType.Size() && !badName
		if valid != (err == nil) {
			t.Fatalf("dtype %d shape %v data %d bytes, name %q: valid=%v, err=%v", dtype, dims, len(data), x.Name, valid, err)
		}
		var e *tsrt.Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("an error without a status: %v", err)
		}
		for _, b := range outBuf[len(outBuf)-guard:] {
			if b != 0xA5 {
				t.Fatal("the run wrote past the output's buffer")
			}
		}
	})
}

// jsonObject reports whether data decodes into v, as the loader decodes a
// manifest.
func jsonObject(data []byte, v any) bool { return json.Unmarshal(data, v) == nil }
