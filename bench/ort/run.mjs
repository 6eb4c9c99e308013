// run.mjs runs an ONNX model once with onnxruntime-node's CPU execution
// provider and writes every output, the reference Tessera's model tests
// compare with:
//
//	node bench/ort/run.mjs MODEL OUTDIR [--input NAME=FILE ...] [--value NAME=V0,V1,... ...]
//	    [--shape NAME=D0,D1,... ...] [--optimization LEVEL] [--config KEY=VALUE ...]
//
// --input gives a float32 input as a raw little-endian file (the format
// `tune run` reads); --value gives an input's values inline in the input's
// own element type (an int64 sample rate: --value sr=16000). An input's
// shape is --shape's, else the model's metadata's, where one dynamic
// dimension takes what the file or the values hold. Each output is
// written as OUTDIR/NAME.bin, raw little-endian float32 (integer and bool
// outputs converted), NAME with characters other than [A-Za-z0-9_.-]
// replaced by '_'; one line per output says NAME=FILE.
//
// --optimization sets the session's graph optimization level (disabled,
// basic, extended, all; default all): a QDQ model runs onnxruntime's
// int8 kernels at extended and above, and as QuantizeLinear, float ops
// and DequantizeLinear, the format's reference semantics, when disabled.
// --config adds a session configuration entry (onnxruntime's
// AddSessionConfigEntry keys): session.x64quantprecision=1 makes the int8
// kernels of an x86-64 CPU without VNNI exact where their u8s8 products
// would overflow 16 bits.
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import ort from 'onnxruntime-node';

function usage(msg) {
	if (msg) process.stderr.write(`run.mjs: ${msg}\n`);
	process.stderr.write('usage: node run.mjs MODEL OUTDIR [--input NAME=FILE ...] [--value NAME=V0,V1,... ...] [--shape NAME=D0,D1,... ...] [--optimization LEVEL] [--config KEY=VALUE ...]\n');
	process.exit(2);
}

function parseArgs(argv) {
	const o = { model: '', out: '', files: new Map(), values: new Map(), shapes: new Map(), optimization: 'all', config: {} };
	const pair = (flag, v) => {
		const i = (v ?? '').indexOf('=');
		if (i <= 0) usage(`${flag} wants NAME=VALUE, got "${v}"`);
		return [v.slice(0, i), v.slice(i + 1)];
	};
	const pos = [];
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		switch (a) {
		case '--input': { const [n, f] = pair(a, argv[++i]); o.files.set(n, f); break; }
		case '--value': { const [n, v] = pair(a, argv[++i]); o.values.set(n, v.split(',').map((s) => s.trim())); break; }
		case '--shape': {
			const [n, v] = pair(a, argv[++i]);
			const dims = v === '' ? [] : v.split(',').map((d) => {
				if (!/^[0-9]+$/.test(d.trim())) usage(`--shape ${n}: dimension "${d}" is not a non-negative integer`);
				return Number(d);
			});
			o.shapes.set(n, dims);
			break;
		}
		case '--optimization': {
			o.optimization = argv[++i] ?? '';
			if (!['disabled', 'basic', 'extended', 'all'].includes(o.optimization)) usage(`--optimization wants disabled, basic, extended or all, got "${o.optimization}"`);
			break;
		}
		case '--config': { const [k, v] = pair(a, argv[++i]); o.config[k] = v; break; }
		case '-h': case '--help': usage(); break;
		default:
			if (a.startsWith('-')) usage(`unknown flag ${a}`);
			pos.push(a);
		}
	}
	if (pos.length !== 2) usage('want MODEL and OUTDIR');
	[o.model, o.out] = pos;
	return o;
}

// shapeFor resolves the input's shape for n elements: --shape's, else the
// metadata's with one dynamic dimension taking what is left.
function shapeFor(name, m, n, given) {
	const shape = (given ?? m.shape).map((d) => (typeof d === 'number' && d >= 0 ? d : -1));
	const known = shape.filter((d) => d >= 0).reduce((a, b) => a * b, 1);
	const dyn = shape.filter((d) => d < 0).length;
	if (dyn === 1 && known > 0 && n % known === 0) shape[shape.indexOf(-1)] = n / known;
	if (shape.some((d) => d < 0) || shape.reduce((a, b) => a * b, 1) !== n) {
		throw new Error(`input ${name} [${(given ?? m.shape).join(',')}] cannot hold ${n} values (give --shape ${name}=D0,D1,...)`);
	}
	return shape;
}

const typed = {
	float32: (v) => Float32Array.from(v, Number),
	int64: (v) => BigInt64Array.from(v, BigInt),
	int32: (v) => Int32Array.from(v, Number),
	bool: (v) => Uint8Array.from(v, (s) => (s === 'true' || s === '1' ? 1 : 0)),
};

function feedsFor(session, o) {
	const feeds = {};
	for (const name of [...o.files.keys(), ...o.values.keys(), ...o.shapes.keys()]) {
		if (!session.inputNames.includes(name)) throw new Error(`${name}: the model's inputs are ${session.inputNames.join(', ')}`);
	}
	session.inputMetadata.forEach((m, i) => {
		const name = session.inputNames[i];
		if (!m.isTensor) throw new Error(`input ${name} is not a tensor`);
		if (o.values.has(name)) {
			const make = typed[m.type];
			if (!make) throw new Error(`input ${name} is ${m.type}: --value takes float32, int64, int32 and bool`);
			const v = o.values.get(name);
			feeds[name] = new ort.Tensor(m.type, make(v), shapeFor(name, m, v.length, o.shapes.get(name)));
			return;
		}
		const file = o.files.get(name);
		if (!file) throw new Error(`input ${name} has neither --input nor --value`);
		if (m.type !== 'float32') throw new Error(`input ${name} is ${m.type}: give it with --value`);
		const buf = fs.readFileSync(file);
		if (buf.length % 4) throw new Error(`${file}: ${buf.length} bytes is not a whole number of float32`);
		const data = new Float32Array(buf.length / 4);
		for (let j = 0; j < data.length; j++) data[j] = buf.readFloatLE(4 * j);
		feeds[name] = new ort.Tensor('float32', data, shapeFor(name, m, data.length, o.shapes.get(name)));
	});
	return feeds;
}

// nested turns config keys into the nested object of the session options'
// extra field, which onnxruntime-node flattens back into "a.b" keys.
function nested(config) {
	const out = {};
	for (const [k, v] of Object.entries(config)) {
		const parts = k.split('.');
		let at = out;
		for (const p of parts.slice(0, -1)) at = at[p] ??= {};
		at[parts[parts.length - 1]] = v;
	}
	return out;
}

async function main() {
	const o = parseArgs(process.argv.slice(2));
	const session = await ort.InferenceSession.create(o.model, {
		executionProviders: ['cpu'], intraOpNumThreads: 1, graphOptimizationLevel: o.optimization, extra: nested(o.config),
	});
	const out = await session.run(feedsFor(session, o));
	fs.mkdirSync(o.out, { recursive: true });
	for (const name of session.outputNames) {
		const t = out[name];
		const buf = Buffer.alloc(4 * t.data.length);
		for (let j = 0; j < t.data.length; j++) buf.writeFloatLE(Number(t.data[j]), 4 * j);
		const file = path.join(o.out, `${name.replace(/[^A-Za-z0-9_.-]/g, '_')}.bin`);
		fs.writeFileSync(file, buf);
		process.stdout.write(`${name}=${file}\n`);
	}
	await session.release();
}

main().catch((e) => {
	process.stderr.write(`run.mjs: ${e.message}\n`);
	process.exit(1);
});
