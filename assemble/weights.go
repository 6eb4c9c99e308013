package assemble

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
)

// The weights file: every constant a kernel reads, as float32, in one blob.
//
//	offset  size  field
//	     0     8  magic "TSRWGHT1"
//	     8     8  payload bytes (little-endian uint64; a multiple of Align)
//	    16     8  checksum of the payload (see checksum)
//	    24    40  zero
//	    64     …  payload: the tensors back to back, each at a multiple of Align
//
// The tensors are the graph's constants after the passes (BatchNorm folded
// into the convolutions, shape arithmetic folded away), stored exactly as
// the kernels read them: row-major, or packed in the order of the loop nest
// that reads them when the kernel's schedule rewrote the layout
// (schedule.RewriteLayout; the kernel's parameter carries the tir.Packing).
// A constant read in two layouts is stored twice. int64 constants a kernel
// reads as data are stored converted to float32, as the reference evaluator
// sees them.
// The library carries the payload size and checksum it was built with and
// refuses any other file.

const (
	weightsMagic      = "TSRWGHT1"
	weightsHeaderSize = 64
)

// ErrCorruptWeights is returned by ReadWeights when the file is not a
// weights file of this format or does not match its own header.
var ErrCorruptWeights = errors.New("not a tessera weights file, or corrupt")

// weightsBlob lays constants out in the payload.
type weightsBlob struct {
	payload []byte
	offsets map[string]int64 // byte offset of each constant in the payload
	order   []string         // constants in placement order
}

// add places a constant, once; it returns its byte offset.
func (w *weightsBlob) add(name string, data []float32) int64 {
	if off, ok := w.offsets[name]; ok {
		return off
	}
	if w.offsets == nil {
		w.offsets = map[string]int64{}
	}
	off := int64(len(w.payload))
	for _, v := range data {
		w.payload = binary.LittleEndian.AppendUint32(w.payload, math.Float32bits(v))
	}
	for len(w.payload)%Align != 0 {
		w.payload = append(w.payload, 0)
	}
	w.offsets[name] = off
	w.order = append(w.order, name)
	return off
}

// checksum is FNV-1a over the payload's little-endian 64-bit words (the
// payload is a whole number of them). The C side computes the same.
func checksum(payload []byte) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i+8 <= len(payload); i += 8 {
		h ^= binary.LittleEndian.Uint64(payload[i:])
		h *= 1099511628211
	}
	return h
}

// file returns the weights file's bytes.
func (w *weightsBlob) file() []byte {
	out := make([]byte, weightsHeaderSize, weightsHeaderSize+len(w.payload))
	copy(out, weightsMagic)
	binary.LittleEndian.PutUint64(out[8:], uint64(len(w.payload)))
	binary.LittleEndian.PutUint64(out[16:], checksum(w.payload))
	return append(out, w.payload...)
}

// WeightsInfo describes a weights file in the manifest.
type WeightsInfo struct {
	File     string `json:"file"`               // "" when Embedded
	Embedded bool   `json:"embedded,omitempty"` // inside the library (tune build --single-file)
	Bytes    int64  `json:"bytes"`              // payload bytes
	Checksum string `json:"checksum"`           // hex of checksum(payload)
	Tensors  int    `json:"tensors"`
	Layout   string `json:"layout"`
}

const weightsLayout = "float32 little-endian, each tensor 64-byte aligned after a 64-byte header; " +
	"row-major as the folded ONNX initializers, or packed for the kernel that reads it (the task's packed list)"

// VerifyWeights checks a weights file against its manifest entry: the
// header, the size and the checksum.
func VerifyWeights(path string, want WeightsInfo) error {
	// The size first, so that a file of the wrong size is not read.
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Size() != want.Bytes+weightsHeaderSize {
		return fmt.Errorf("weights %s: %w: %d bytes, the manifest says %d payload bytes after a %d-byte header", path, ErrCorruptWeights, fi.Size(), want.Bytes, weightsHeaderSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("weights: %w", err)
	}
	if len(data) < weightsHeaderSize || string(data[:8]) != weightsMagic {
		return fmt.Errorf("weights %s: %w (no %q header)", path, ErrCorruptWeights, weightsMagic)
	}
	n := binary.LittleEndian.Uint64(data[8:])
	if uint64(len(data)-weightsHeaderSize) != n || int64(n) != want.Bytes {
		return fmt.Errorf("weights %s: %w: %d payload bytes, header says %d, manifest %d", path, ErrCorruptWeights, len(data)-weightsHeaderSize, n, want.Bytes)
	}
	payload := data[weightsHeaderSize:]
	sum := fmt.Sprintf("%016x", checksum(payload))
	header := fmt.Sprintf("%016x", binary.LittleEndian.Uint64(data[16:]))
	if sum != want.Checksum || header != sum {
		return fmt.Errorf("weights %s: %w: the payload's checksum is %s, the file's header says %s, the manifest %s", path, ErrCorruptWeights, sum, header, want.Checksum)
	}
	return nil
}
