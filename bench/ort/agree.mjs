// agree.mjs sums up how two quantized models' outputs agree over many
// inputs: pairs of raw little-endian float32 outputs (one pair per input),
// compared in steps of the output's scale as steps.mjs does for one:
//
//	node bench/ort/agree.mjs STEP MAX GOT1 WANT1 [GOT2 WANT2 ...]
//
// It prints, over the inputs, on how many each side's largest value (a
// classifier's top-1) is at the same index, the largest difference in
// steps, and how many values differ by more than one step, and exits 1
// when a value differs by more than MAX steps or either side holds a NaN
// or an infinity.
import fs from 'node:fs';
import process from 'node:process';

const [stepArg, maxArg, ...files] = process.argv.slice(2);
if (!(Number(stepArg) > 0) || !(Number(maxArg) >= 0) || files.length === 0 || files.length % 2) {
	process.stderr.write('usage: node agree.mjs STEP MAX GOT1 WANT1 [GOT2 WANT2 ...]\n');
	process.exit(2);
}
const read = (p) => {
	const b = fs.readFileSync(p);
	if (b.length % 4) throw new Error(`${p}: ${b.length} bytes is not a whole number of float32`);
	return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
};
const argmax = (v) => v.reduce((best, x, i) => (x > v[best] ? i : best), 0);
const step = Number(stepArg);
const limit = Number(maxArg);
let inputs = 0, top1 = 0, worst = 0, beyondOne = 0, values = 0, finite = true;
for (let k = 0; k < files.length; k += 2) {
	const got = read(files[k]);
	const want = read(files[k + 1]);
	if (got.length !== want.length) {
		process.stdout.write(`outputs differ in size: ${got.length} values in ${files[k]}, ${want.length} in ${files[k + 1]}\n`);
		process.exit(1);
	}
	inputs++;
	values += got.length;
	if (argmax(got) === argmax(want)) top1++;
	for (let i = 0; i < got.length; i++) {
		if (!Number.isFinite(got[i]) || !Number.isFinite(want[i])) finite = false;
		const d = Math.abs(got[i] - want[i]) / step;
		worst = Math.max(worst, d);
		if (d > 1 + 1e-3) beyondOne++;
	}
}
const line = `${inputs} random inputs: top-1 equal on ${inputs === top1 ? 'all' : top1} of ${inputs}; max ${worst.toFixed(2)} steps; ${beyondOne} of ${values} values beyond 1 step`;
if (!finite || worst > limit + 1e-3) {
	process.stdout.write(`outputs differ on ${line}${finite ? '' : ' (NaN or infinity)'}; at most ${limit} allowed\n`);
	process.exit(1);
}
process.stdout.write(`outputs agree on ${line}\n`);
