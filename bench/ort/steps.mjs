// steps.mjs compares two raw little-endian float32 outputs of a quantized
// model in steps of the output's scale (one step = one unit of its
// QuantizeLinear):
//
//	node bench/ort/steps.mjs GOT WANT STEP [MAX]
//
// It prints how many values differ by 0, 1, 2, ... steps, the largest
// difference in steps and the index of each side's largest value (a
// classifier's top-1), and exits 1 when a value differs by more than MAX
// steps (default: no limit) or either side holds a NaN or an infinity.
import fs from 'node:fs';
import process from 'node:process';

const [gotPath, wantPath, stepArg, maxArg] = process.argv.slice(2);
if (!gotPath || !wantPath || !(Number(stepArg) > 0)) {
	process.stderr.write('usage: node steps.mjs GOT WANT STEP [MAX]\n');
	process.exit(2);
}
const read = (p) => {
	const b = fs.readFileSync(p);
	if (b.length % 4) throw new Error(`${p}: ${b.length} bytes is not a whole number of float32`);
	return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
};
const got = read(gotPath);
const want = read(wantPath);
if (got.length !== want.length) {
	process.stdout.write(`outputs differ in size: ${got.length} values in ${gotPath}, ${want.length} in ${wantPath}\n`);
	process.exit(1);
}
const step = Number(stepArg);
const hist = new Map();
let worst = 0;
let finite = true;
for (let i = 0; i < got.length; i++) {
	if (!Number.isFinite(got[i]) || !Number.isFinite(want[i])) finite = false;
	const d = Math.abs(got[i] - want[i]) / step;
	worst = Math.max(worst, d);
	const k = Math.round(d);
	hist.set(k, (hist.get(k) ?? 0) + 1);
}
const argmax = (v) => v.reduce((best, x, i) => (x > v[best] ? i : best), 0);
const counts = [...hist.keys()].sort((a, b) => a - b).map((k) => `${hist.get(k)} at ${k}`).join(', ');
const line = `${got.length} values in steps of ${step}: ${counts}; max ${worst.toFixed(2)} steps; top-1 ${argmax(got)} vs ${argmax(want)}`;
const limit = maxArg === undefined ? Infinity : Number(maxArg);
if (!finite || worst > limit + 1e-3) {
	process.stdout.write(`outputs differ: ${line}${finite ? '' : ' (NaN or infinity)'}; at most ${limit} allowed\n`);
	process.exit(1);
}
process.stdout.write(`outputs agree: ${line}\n`);
