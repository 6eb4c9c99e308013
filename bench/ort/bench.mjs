// bench.mjs times an ONNX model with onnxruntime-node's CPU execution
// provider, the other side of bench/onnxruntime.sh:
//
//	node bench/ort/bench.mjs MODEL [--input NAME=FILE ...] [--shape NAME=D0,D1,...]
//	    [--threads N] [--warmup W] [--repeat R] [--output [NAME=]FILE]
//	    [--profile PREFIX]
//
// Inputs are raw little-endian float32 files, the format `tune run` reads,
// or .npy files (float32 or int64: token ids), which carry their shape; a raw
// input's shape comes from the model's input metadata unless --shape gives
// it (needed for dynamic dimensions). The session runs sequentially
// (interOpNumThreads = 1) with intraOpNumThreads = N and onnxruntime's full
// graph optimization level, the defaults a user would get otherwise. After W
// warm-up runs it times R runs one by one and prints, like `tune bench`,
//
//	min ms = <x>
//	median ms = <y>
//
// --output writes the model's output (the first one, or the one named) as
// raw float32 so that the script can compare it with Tessera's. A line on
// stderr says what ran and how many threads were busy while timed (had at
// least a fifth of the process's CPU time): that is the check that N took
// effect. Node itself keeps about ten idle threads; onnxruntime adds N − 1.
//
// --profile turns onnxruntime's profiler on (its JSON trace goes to
// PREFIX_<date>.json) and prints, after the times, where the timed runs
// spent their time: per op type, then the slowest nodes, each as mean ms
// per run (the profiler's own overhead included), the counterpart of
// `tune bench --profile`.
import fs from 'node:fs';
import process from 'node:process';
import ort from 'onnxruntime-node';
import { readNpy } from './npy.mjs';

function usage(msg) {
	if (msg) process.stderr.write(`bench.mjs: ${msg}\n`);
	process.stderr.write('usage: node bench.mjs MODEL [--input NAME=FILE ...] [--shape NAME=D0,D1,...] ' +
		'[--threads N] [--warmup W] [--repeat R] [--output [NAME=]FILE] [--profile PREFIX]\n');
	process.exit(2);
}

// parseArgs reads the command line; every flag takes a value.
function parseArgs(argv) {
	const o = { model: '', inputs: new Map(), shapes: new Map(), threads: 1, warmup: 10, repeat: 50, output: '', outputName: '', profile: '' };
	const nonNegInt = (flag, v, min) => {
		if (!/^[0-9]+$/.test(v) || Number(v) < min) usage(`${flag} wants an integer ≥ ${min}, got "${v}"`);
		return Number(v);
	};
	const pair = (flag, v) => {
		const i = v.indexOf('=');
		if (i <= 0) usage(`${flag} wants NAME=VALUE, got "${v}"`);
		return [v.slice(0, i), v.slice(i + 1)];
	};
	for (let i = 0; i < argv.length; i++) {
		let a = argv[i];
		if (!a.startsWith('-')) {
			if (o.model) usage(`more than one model: ${o.model}, ${a}`);
			o.model = a;
			continue;
		}
		let v;
		const eq = a.indexOf('=');
		if (a.startsWith('--') && eq > 0) {
			v = a.slice(eq + 1);
			a = a.slice(0, eq);
		} else {
			if (i + 1 >= argv.length) usage(`${a} needs a value`);
			v = argv[++i];
		}
		switch (a) {
		case '--model': o.model = v; break;
		case '--input': { const [n, f] = pair(a, v); o.inputs.set(n, f); break; }
		case '--shape': {
			const [n, s] = pair(a, v);
			const dims = s.split(',').map((d) => nonNegInt(a, d.trim(), 0));
			o.shapes.set(n, dims);
			break;
		}
		case '--threads': o.threads = nonNegInt(a, v, 1); break;
		case '--warmup': o.warmup = nonNegInt(a, v, 0); break;
		case '--repeat': o.repeat = nonNegInt(a, v, 1); break;
		case '--output': {
			const i = v.indexOf('=');
			if (i > 0) { o.outputName = v.slice(0, i); o.output = v.slice(i + 1); } else o.output = v;
			break;
		}
		case '--profile': o.profile = v; break;
		case '-h': case '--help': usage(); break;
		default: usage(`unknown flag ${a}`);
		}
	}
	if (!o.model) usage('no model given');
	return o;
}

// feedsFor builds one tensor per model input from its file.
function feedsFor(session, o) {
	const feeds = {};
	for (const name of o.inputs.keys()) {
		if (!session.inputNames.includes(name)) {
			throw new Error(`--input ${name}: the model's inputs are ${session.inputNames.join(', ')}`);
		}
	}
	session.inputMetadata.forEach((m, i) => {
		const name = session.inputNames[i];
		const file = o.inputs.get(name);
		if (!file) throw new Error(`input ${name} has no --input ${name}=FILE`);
		if (file.endsWith('.npy')) {
			const t = readNpy(file);
			if (m.isTensor && m.type !== t.type) throw new Error(`input ${name} is ${m.type}; ${file} holds ${t.type}`);
			feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
			return;
		}
		if (m.isTensor && m.type !== 'float32') throw new Error(`input ${name} is ${m.type}; raw files are float32 (give a .npy)`);
		let shape = o.shapes.get(name);
		if (!shape) {
			if (!m.isTensor || m.shape.some((d) => typeof d !== 'number' || d < 0)) {
				throw new Error(`input ${name} has shape [${m.isTensor ? m.shape.join(',') : '?'}]; give --shape ${name}=D0,D1,...`);
			}
			shape = m.shape.slice();
		}
		const buf = fs.readFileSync(file);
		const n = shape.reduce((a, b) => a * b, 1);
		if (buf.length !== 4 * n) {
			throw new Error(`${file}: ${buf.length} bytes, input ${name} [${shape.join(',')}] wants ${4 * n}`);
		}
		const data = new Float32Array(n);
		for (let j = 0; j < n; j++) data[j] = buf.readFloatLE(4 * j);
		feeds[name] = new ort.Tensor('float32', data, shape);
	});
	return feeds;
}

function writeOutput(session, out, o) {
	const name = o.outputName || session.outputNames[0];
	const t = out[name];
	if (!t) throw new Error(`--output ${name}: the model's outputs are ${session.outputNames.join(', ')}`);
	if (t.type !== 'float32') throw new Error(`output ${name} is ${t.type}, not float32`);
	const buf = Buffer.alloc(4 * t.data.length);
	for (let j = 0; j < t.data.length; j++) buf.writeFloatLE(t.data[j], 4 * j);
	fs.writeFileSync(o.output, buf);
}

// threadTicks returns each thread's CPU time (user + system, in clock
// ticks) by thread id, or an empty map where /proc is missing.
function threadTicks() {
	const m = new Map();
	let tids = [];
	try {
		tids = fs.readdirSync('/proc/self/task');
	} catch {
		return m;
	}
	for (const tid of tids) {
		try {
			const st = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
			const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
			m.set(tid, Number(f[11]) + Number(f[12])); // utime, stime (fields 14, 15)
		} catch {
			// the thread ended
		}
	}
	return m;
}

// busyThreads says how the process's CPU time between two threadTicks was
// spread: the number of threads that had at least a fifth of it (the threads
// doing the work, whatever else the machine runs), and the CPU time over the
// wall time (below the thread count when the machine is busy).
function busyThreads(before, after, wallMs) {
	const used = [];
	for (const [tid, t] of after) used.push(t - (before.get(tid) ?? 0));
	const total = used.reduce((a, b) => a + b, 0);
	const busy = used.filter((u) => total > 0 && u >= total / 5).length;
	return `${busy} of them busy while timed, CPU/wall ${(total * 10 / wallMs).toFixed(2)}`; // USER_HZ is 100
}

async function main() {
	const o = parseArgs(process.argv.slice(2));
	const session = await ort.InferenceSession.create(o.model, {
		executionProviders: ['cpu'],
		intraOpNumThreads: o.threads,
		interOpNumThreads: 1,
		executionMode: 'sequential',
		graphOptimizationLevel: 'all',
		...(o.profile ? { enableProfiling: true, profileFilePrefix: o.profile } : {}),
	});
	const feeds = feedsFor(session, o);

	// The first run builds onnxruntime's thread pool state and memory arena;
	// it counts as a warm-up run.
	let out = await session.run(feeds);
	if (o.output) writeOutput(session, out, o);
	for (let i = 1; i < o.warmup; i++) out = await session.run(feeds);

	const ms = new Array(o.repeat);
	const ticks0 = threadTicks();
	const wall0 = process.hrtime.bigint();
	for (let i = 0; i < o.repeat; i++) {
		const t0 = process.hrtime.bigint();
		await session.run(feeds);
		ms[i] = Number(process.hrtime.bigint() - t0) / 1e6;
	}
	const wallMs = Number(process.hrtime.bigint() - wall0) / 1e6;
	const ticks1 = threadTicks();
	ms.sort((a, b) => a - b);
	const mid = ms.length >> 1;
	const median = ms.length % 2 ? ms[mid] : (ms[mid - 1] + ms[mid]) / 2;
	process.stderr.write(`onnxruntime-node ${ort.env.versions.node}: cpu, intraOpNumThreads ${o.threads}, ` +
		`interOpNumThreads 1, sequential, graph optimization all; ${Math.max(o.warmup, 1)} warm-up, ` +
		`${o.repeat} timed runs; ${ticks1.size} threads in the process, ` +
		`${busyThreads(ticks0, ticks1, wallMs)}\n`);
	process.stdout.write(`min ms = ${ms[0].toFixed(3)}\nmedian ms = ${median.toFixed(3)}\n`);
	if (o.profile) {
		session.endProfiling();
		printProfile(o);
	}
	await session.release();
}

// printProfile reads the newest trace PREFIX_*.json and prints the node
// times of its last R runs (the timed ones) per op type and per node.
function printProfile(o) {
	const dir = o.profile.includes('/') ? o.profile.slice(0, o.profile.lastIndexOf('/')) || '/' : '.';
	const base = o.profile.slice(o.profile.lastIndexOf('/') + 1);
	const files = fs.readdirSync(dir).filter((f) => f.startsWith(base + '_') && f.endsWith('.json'))
		.map((f) => `${dir}/${f}`).sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
	if (!files.length) throw new Error(`--profile: no trace ${o.profile}_*.json was written`);
	const events = JSON.parse(fs.readFileSync(files[0], 'utf8'));
	const runs = events.filter((e) => e.cat === 'Session' && e.name === 'model_run');
	const timed = runs.slice(-o.repeat);
	if (!timed.length) throw new Error(`${files[0]}: no model_run events`);
	const from = timed[0].ts;
	const byOp = new Map();
	const byNode = new Map();
	for (const e of events) {
		if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time') || e.ts < from) continue;
		const op = e.args?.op_name ?? '?';
		const node = e.name.slice(0, -'_kernel_time'.length);
		byOp.set(op, (byOp.get(op) ?? 0) + e.dur);
		const n = byNode.get(node) ?? { op, us: 0 };
		n.us += e.dur;
		byNode.set(node, n);
	}
	const total = [...byOp.values()].reduce((a, b) => a + b, 0);
	const perRun = (us) => (us / 1000 / timed.length).toFixed(4);
	process.stdout.write(`profile (${files[0]}): ${timed.length} runs, nodes ${perRun(total)} ms per run\n`);
	process.stdout.write('op type                          ms/run   share\n');
	for (const [op, us] of [...byOp].sort((a, b) => b[1] - a[1])) {
		process.stdout.write(`${op.padEnd(30)} ${perRun(us).padStart(8)}  ${(100 * us / total).toFixed(1).padStart(5)}%\n`);
	}
	process.stdout.write('slowest nodes                                        op                ms/run\n');
	for (const [node, n] of [...byNode].sort((a, b) => b[1].us - a[1].us).slice(0, 25)) {
		process.stdout.write(`${node.slice(0, 52).padEnd(52)} ${n.op.padEnd(16)} ${perRun(n.us).padStart(8)}\n`);
	}
}

main().catch((e) => {
	process.stderr.write(`bench.mjs: ${e.message}\n`);
	process.exit(1);
});
