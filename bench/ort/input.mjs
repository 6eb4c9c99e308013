// input.mjs writes random inputs for a model, one raw little-endian float32
// file per input, and prints NAME=FILE for each (the form of --input):
//
//	node bench/ort/input.mjs MODEL DIR [SEED]
//
// Values are uniform in [-1, 1) from a 32-bit xorshift generator, so the same
// seed always gives the same files. Shapes come from the model's input
// metadata; inputs with dynamic dimensions are refused.
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import ort from 'onnxruntime-node';

async function main() {
	const [model, dir, seedArg = '1'] = process.argv.slice(2);
	if (!model || !dir || !/^[0-9]+$/.test(seedArg)) {
		process.stderr.write('usage: node input.mjs MODEL DIR [SEED]\n');
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
		if (!m.isTensor || m.type !== 'float32' || m.shape.some((d) => typeof d !== 'number' || d < 0)) {
			throw new Error(`input ${name}: only float32 inputs of static shape are generated`);
		}
		const n = m.shape.reduce((a, b) => a * b, 1);
		const buf = Buffer.alloc(4 * n);
		for (let j = 0; j < n; j++) buf.writeFloatLE(next() / 2 ** 31 - 1, 4 * j);
		const file = path.join(dir, `${name.replace(/[^A-Za-z0-9_.-]/g, '_')}.bin`);
		fs.writeFileSync(file, buf);
		process.stdout.write(`${name}=${file}\n`);
	});
	await session.release();
}

main().catch((e) => {
	process.stderr.write(`input.mjs: ${e.message}\n`);
	process.exit(1);
});
