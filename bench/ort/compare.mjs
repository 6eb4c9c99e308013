// compare.mjs checks that two raw little-endian float32 files hold the same
// values within tolerance (a .npy file, float32, may stand for either):
//
//	node bench/ort/compare.mjs GOT WANT [RTOL [ATOL_REL]]
//
// Every value must satisfy |got − want| ≤ ATOL_REL·max|want| + RTOL·|want|
// (defaults 1e-3 and 1e-4), and neither file may hold a NaN or an infinity.
// It prints one line with the largest differences and exits 1 on a mismatch.
import fs from 'node:fs';
import process from 'node:process';
import { readNpy } from './npy.mjs';

const [gotPath, wantPath, rtolArg = '1e-3', atolArg = '1e-4'] = process.argv.slice(2);
if (!gotPath || !wantPath) {
	process.stderr.write('usage: node compare.mjs GOT WANT [RTOL [ATOL_REL]]\n');
	process.exit(2);
}
const read = (p) => {
	if (p.endsWith('.npy')) {
		const t = readNpy(p);
		if (t.type !== 'float32') throw new Error(`${p}: ${t.type} values, not float32`);
		return t.data;
	}
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
let maxWant = 0;
for (const w of want) maxWant = Math.max(maxWant, Math.abs(w));
const rtol = Number(rtolArg);
const atol = Number(atolArg) * maxWant;
let maxDiff = 0;
let worst = -1;
let bad = 0;
for (let i = 0; i < got.length; i++) {
	const d = Math.abs(got[i] - want[i]);
	if (!Number.isFinite(got[i]) || !Number.isFinite(want[i]) || !(d <= atol + rtol * Math.abs(want[i]))) {
		bad++;
		if (worst < 0) worst = i;
	}
	if (d > maxDiff || Number.isNaN(d)) maxDiff = d;
}
const summary = `${got.length} values, max |diff| = ${maxDiff.toExponential(3)}, max |want| = ${maxWant.toExponential(3)}, ` +
	`tolerance ${atol.toExponential(3)} + ${rtol}·|want|`;
if (bad) {
	process.stdout.write(`outputs differ: ${bad} of ${summary}; first at [${worst}]: got ${got[worst]}, want ${want[worst]}\n`);
	process.exit(1);
}
process.stdout.write(`outputs agree: ${summary}\n`);
