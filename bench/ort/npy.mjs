// npy.mjs reads the .npy files the race scripts use: PyTorch's inputs and
// outputs of the model zoo (modelgen/zoo/export.py).
import fs from 'node:fs';

// readNpy reads a little-endian float32 or int64 .npy file (C order):
// its ONNX element type, shape and values.
export function readNpy(file) {
	const b = fs.readFileSync(file);
	if (b.length < 10 || b.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not a .npy file`);
	const major = b[6];
	const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
	const start = (major === 1 ? 10 : 12) + hlen;
	const header = b.toString('latin1', major === 1 ? 10 : 12, start);
	const descr = /'descr':\s*'([^']*)'/.exec(header);
	const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
	if (!descr || !shape || /'fortran_order':\s*True/.test(header)) throw new Error(`${file}: unreadable .npy header ${header.trim()}`);
	const dims = shape[1].split(',').map((d) => d.trim()).filter((d) => d !== '').map(Number);
	const n = dims.reduce((a, d) => a * d, 1);
	const body = b.subarray(start);
	switch (descr[1]) {
	case '<f4': {
		if (body.length !== 4 * n) throw new Error(`${file}: ${body.length} bytes of data for shape [${dims}]`);
		const data = new Float32Array(n);
		for (let j = 0; j < n; j++) data[j] = body.readFloatLE(4 * j);
		return { type: 'float32', dims, data };
	}
	case '<i8': {
		if (body.length !== 8 * n) throw new Error(`${file}: ${body.length} bytes of data for shape [${dims}]`);
		const data = new BigInt64Array(n);
		for (let j = 0; j < n; j++) data[j] = body.readBigInt64LE(8 * j);
		return { type: 'int64', dims, data };
	}
	default:
		throw new Error(`${file}: element type ${descr[1]}; float32 (<f4) and int64 (<i8) are read`);
	}
}
