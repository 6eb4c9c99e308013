package assemble

import (
	"encoding/binary"
	"math"

	"github.com/tessera-ml/tessera/tsrt"
)

// The weights file (its format: tsrt/weights.go): every constant a kernel
// reads, as float32, in one blob.
//
// The tensors are the graph's constants after the passes (BatchNorm folded
// into the convolutions, shape arithmetic folded away), stored exactly as
// the kernels read them: row-major, or packed in the order of the loop nest
// that reads them when the kernel's schedule rewrote the layout
// (schedule.RewriteLayout; the kernel's parameter carries the tir.Packing).
// Each tensor starts at a multiple of Align. A constant read in two layouts
// is stored twice. int64 constants a kernel reads as data are stored
// converted to float32, as the reference evaluator sees them.

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

// file returns the weights file's bytes.
func (w *weightsBlob) file() []byte {
	out := make([]byte, tsrt.WeightsHeaderSize, tsrt.WeightsHeaderSize+len(w.payload))
	copy(out, tsrt.WeightsMagic)
	binary.LittleEndian.PutUint64(out[8:], uint64(len(w.payload)))
	binary.LittleEndian.PutUint64(out[16:], tsrt.WeightsChecksum(w.payload))
	return append(out, w.payload...)
}

const weightsLayout = "float32 little-endian, each tensor 64-byte aligned after a 64-byte header; " +
	"row-major as the folded ONNX initializers, or packed for the kernel that reads it (the task's packed list)"
