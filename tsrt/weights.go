package tsrt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// The weights file: every constant a kernel reads, in one blob, which
// the library maps read-only (c/runtime.c) and package assemble writes.
//
//	offset  size  field
//	     0     8  magic "TSRWGHT1" (WeightsMagic)
//	     8     8  payload bytes (little-endian uint64)
//	    16     8  checksum of the payload (WeightsChecksum)
//	    24    40  zero
//	    64     …  payload (WeightsHeaderSize on)
//
// The library carries the payload size and checksum it was built with and
// refuses any other file when it opens; VerifyWeights checks a file
// against the manifest before anything is loaded (tune run and tune
// bench do, for its messages).

// The weights file's header.
const (
	WeightsMagic      = "TSRWGHT1"
	WeightsHeaderSize = 64
)

// ErrCorruptWeights is returned by VerifyWeights when the file is not a
// weights file of this format or does not match its own header.
var ErrCorruptWeights = errors.New("not a tessera weights file, or corrupt")

// WeightsChecksum is FNV-1a over the payload's little-endian 64-bit words
// (the payload is a whole number of them). The C side computes the same.
func WeightsChecksum(payload []byte) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i+8 <= len(payload); i += 8 {
		h ^= binary.LittleEndian.Uint64(payload[i:])
		h *= 1099511628211
	}
	return h
}

// WeightsInfo describes a weights file in the manifest.
type WeightsInfo struct {
	File     string `json:"file"`               // "" when Embedded
	Embedded bool   `json:"embedded,omitempty"` // inside the library (tune build --single-file)
	Bytes    int64  `json:"bytes"`              // payload bytes
	Checksum string `json:"checksum"`           // hex of WeightsChecksum(payload)
	Tensors  int    `json:"tensors"`
	Layout   string `json:"layout"`
}

// VerifyWeights checks a weights file against its manifest entry: the
// header, the size and the checksum. It reads the file in pieces: the
// weights are never in memory twice.
func VerifyWeights(path string, want WeightsInfo) error {
	// The size first, so that a file of the wrong size is not read.
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Size() != want.Bytes+WeightsHeaderSize {
		return fmt.Errorf("weights %s: %w: %d bytes, the manifest says %d payload bytes after a %d-byte header", path, ErrCorruptWeights, fi.Size(), want.Bytes, WeightsHeaderSize)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("weights: %w", err)
	}
	defer f.Close()
	header := make([]byte, WeightsHeaderSize)
	if _, err := io.ReadFull(f, header); err != nil || string(header[:8]) != WeightsMagic {
		return fmt.Errorf("weights %s: %w (no %q header)", path, ErrCorruptWeights, WeightsMagic)
	}
	h := uint64(14695981039346656037)
	var size uint64
	buf := make([]byte, 1<<20)
	for {
		k, err := io.ReadFull(f, buf)
		for i := 0; i+8 <= k; i += 8 {
			h ^= binary.LittleEndian.Uint64(buf[i:])
			h *= 1099511628211
		}
		size += uint64(k)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return fmt.Errorf("weights: %w", err)
		}
	}
	n := binary.LittleEndian.Uint64(header[8:])
	if size != n || int64(n) != want.Bytes {
		return fmt.Errorf("weights %s: %w: %d payload bytes, header says %d, manifest %d", path, ErrCorruptWeights, size, n, want.Bytes)
	}
	sum := fmt.Sprintf("%016x", h)
	inHeader := fmt.Sprintf("%016x", binary.LittleEndian.Uint64(header[16:]))
	if sum != want.Checksum || inHeader != sum {
		return fmt.Errorf("weights %s: %w: the payload's checksum is %s, the file's header says %s, the manifest %s", path, ErrCorruptWeights, sum, inHeader, want.Checksum)
	}
	return nil
}
