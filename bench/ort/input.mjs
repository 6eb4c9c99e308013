// input.mjs writes random inputs for a model, one file per input, and prints
// NAME=FILE for each (the form of --input):
//
//	node bench/ort/input.mjs MODEL DIR [SEED] [--dims NAME=V,NAME=V...] [--npy]
//
// Float values are uniform in [-1, 1) from a 32-bit xorshift generator, so the
// same seed always gives the same files; int64 values (token ids, masks) are 0
// or 1, valid for both. Shapes come from the model's input metadata, its
// named dynamic dimensions bound by --dims (an unbound one is refused). A
// float32 input of static shape is written as raw little-endian float32
// (.bin); any other as .npy, which carries its shape and type; with --npy,
// every input as .npy (the calibration files of tune quantize).
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import ort from 'onnxruntime-node';

async function main() {
	const args = process.argv.slice(2);
	const dims = {};
	const at = args.indexOf('--dims');
	if (at >= 0) {
		for (const kv of (args[at + 1] || '').split(',')) {
			const [k, v] = kv.split('=');
			if (!k || !/^[0-9]+$/.test(v || '')) {
				process.stderr.write(`input.mjs: --dims ${args[at + 1]}: want NAME=V,...\n`);
				process.exit(2);
			}
			dims[k] = Number(v);
		}
		args.splice(at, 2);
	}
	const npyAt = args.indexOf('--npy');
	const allNpy = npyAt >= 0;
	if (allNpy) args.splice(npyAt, 1);
	const [model, dir, seedArg = '1'] = args;
	if (!model || !dir || !/^[0-9]+$/.test(seedArg)) {
		process.stderr.write('usage: node input.mjs MODEL DIR [SEED] [--dims NAME=V,...] [--npy]\n');
		process.exit(2);
	}
	let s = (Number(seedArg) >>> 0) || 0x9e3779b9;
	const next = () => {
		s ^= s << 13; s >>>= 0;
		s ^= s >>> 17;
		s ^= s << 5; s >>>= 0;
		return s;
	};
	const session = await ort.InferenceSession.create(model, { executionProviders: ['cpu'], graphOptimizationLevel: 'disabled' });
	fs.mkdirSync(dir, { recursive: true });
	session.inputMetadata.forEach((m, i) => {
		const name = session.inputNames[i];
		if (!m.isTensor || (m.type !== 'float32' && m.type !== 'int64')) {
			throw new Error(`input ${name}: only float32 and int64 inputs are generated`);
		}
		const shape = m.shape.map((d) => (typeof d === 'string' && d in dims ? dims[d] : d));
		if (shape.some((d) => typeof d !== 'number' || d < 0)) {
			throw new Error(`input ${name}: shape [${m.shape}] has a dynamic dimension --dims does not bind`);
		}
		const n = shape.reduce((a, b) => a * b, 1);
		const size = m.type === 'int64' ? 8 : 4;
		const buf = Buffer.alloc(size * n);
		for (let j = 0; j < n; j++) {
			if (m.type === 'int64') buf.writeBigInt64LE(BigInt(next() & 1), 8 * j);
			else buf.writeFloatLE(next() / 2 ** 31 - 1, 4 * j);
		}
		const base = path.join(dir, name.replace(/[^A-Za-z0-9_.-]/g, '_'));
		let file = `${base}.bin`;
		if (allNpy || m.type !== 'float32' || m.shape.some((d) => typeof d !== 'number' || d < 0)) {
			let header = `{'descr': '${m.type === 'int64' ? '<i8' : '<f4'}', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
			header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
			const pre = Buffer.alloc(10);
			pre.write('\x93NUMPY', 0, 'latin1');
			pre[6] = 1;
			pre.writeUInt16LE(header.length, 8);
			file = `${base}.npy`;
			fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), buf]));
		} else {
			fs.writeFileSync(file, buf);
		}
		process.stdout.write(`${name}=${file}\n`);
	});
	await session.release();
}

main().catch((e) => {
	process.stderr.write(`input.mjs: ${e.message}\n`);
	process.exit(1);
});
