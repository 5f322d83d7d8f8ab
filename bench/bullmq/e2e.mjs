#!/usr/bin/env node
// bench/bullmq/e2e.mjs: BullMQ's end-to-end figure, for bench/run to print
// next to echo_mq's shapes. The shape: a producer process adding jobs one
// at a time (queue.add, one job per call; -producers loops, each awaiting
// its add before the next, as emqbench's producers do), and a Worker with
// concurrency 50 whose processor returns at once, jobs added with
// removeOnComplete. Producers wait while more than -backlog jobs are added
// and not completed, as emqbench's do, so a run measures a steady state.
//
//	(cd bench/bullmq && npm ci) && node bench/bullmq/e2e.mjs -redis redis://127.0.0.1:6379 -warmup 2s -duration 10s
//
// It prints its rows in emqbench's columns (jobs/s completed in the
// measured window; Redis's CPU, INFO cpu used_cpu_user + used_cpu_sys,
// over the measured window per job completed in it; per route, calls/s,
// p50 and p99), and with -summary FILE the same figures unrounded, as
// emqbench -summary writes them. Run it against a redis-server of its own:
// Redis's CPU is the whole server's.
//
// This process is the Worker and the clock; the producer is a child
// process (this file with -role producer) that the Worker's process tells,
// over IPC, how many jobs have completed: the backlog bound costs Redis
// nothing, as emqbench's in-process count costs it nothing.
import { fork } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Queue, Worker } from 'bullmq';
import IORedis from 'ioredis';

// payload is emqbench's: 100 bytes of JSON, the size the figures
// are given for.
const payload = JSON.parse('{"to":"user@example.com","template":"welcome","locale":"en-GB","pad":"abcdefghijklmnopqrstuvwxyz01"}');

const usage = `usage: node e2e.mjs [flags]
  -redis URL        BullMQ's redis-server (default redis://127.0.0.1:6379)
  -warmup D         time before measuring, e.g. 2s, 500ms (default 2s)
  -duration D       time measured (default 10s)
  -backlog N        producers wait while more than N jobs are added and not completed (default 2000)
  -producers N      add loops in the producer process, each one queue.add at a time (default 8, as emqbench)
  -concurrency N    the Worker's concurrency (default 50)
  -queue NAME       the queue (default bench-e2e-<ms>)
  -summary FILE     also write the figures there: shape, via, jobs/s, redis cpu µs/job (tab-separated)`;

// FlagError is a bad command line: its message is printed without a stack.
class FlagError extends Error {}

// parseFlags reads Go-style flags: -name value, -name=value, --name value.
function parseFlags(argv) {
	const o = {
		redis: 'redis://127.0.0.1:6379', warmup: '2s', duration: '10s', backlog: '2000', producers: '8',
		concurrency: '50', queue: `bench-e2e-${Date.now()}`, summary: '', role: 'worker',
	};
	for (let i = 0; i < argv.length; i++) {
		const m = /^--?([a-z]+)(?:=(.*))?$/.exec(argv[i]);
		if (!m || m[1] === 'h' || m[1] === 'help' || !(m[1] in o)) {
			throw new FlagError(m && (m[1] === 'h' || m[1] === 'help') ? usage : `bad argument ${JSON.stringify(argv[i])}\n${usage}`);
		}
		if (m[2] !== undefined) {
			o[m[1]] = m[2];
		} else if (i + 1 < argv.length) {
			o[m[1]] = argv[++i];
		} else {
			throw new FlagError(`flag -${m[1]} needs a value\n${usage}`);
		}
	}
	const ints = {};
	for (const name of ['backlog', 'producers', 'concurrency']) {
		ints[name] = Number(o[name]);
		if (!Number.isInteger(ints[name]) || ints[name] < (name === 'backlog' ? 0 : 1)) {
			throw new FlagError(`-${name} ${JSON.stringify(o[name])}: want a positive integer`);
		}
	}
	return { ...o, ...ints, warmupMs: parseDuration(o.warmup, 'warmup'), durationMs: parseDuration(o.duration, 'duration') };
}

// parseDuration reads a Go duration (1m30s, 10s, 500ms, 1.5s) as milliseconds.
function parseDuration(s, name) {
	const unit = { h: 3600e3, m: 60e3, s: 1e3, ms: 1, us: 1e-3, 'µs': 1e-3, ns: 1e-6 };
	let ms = 0;
	let rest = s;
	while (rest !== '') {
		const m = /^(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s|us|µs|ns)/.exec(rest);
		if (!m) throw new FlagError(`-${name} ${JSON.stringify(s)}: want a duration such as 10s or 500ms`);
		ms += Number(m[1]) * unit[m[2]];
		rest = rest.slice(m[0].length);
	}
	if (s === '' || (ms <= 0 && name === 'duration')) throw new FlagError(`-${name} ${JSON.stringify(s)}: want a positive duration`);
	return ms;
}

// connection is BullMQ's connection options for a redis:// URL.
function connection(url) {
	const u = new URL(url);
	if (u.protocol !== 'redis:') throw new FlagError(`-redis ${url}: want a redis:// URL`);
	return {
		host: u.hostname || '127.0.0.1', port: Number(u.port || 6379),
		username: decodeURIComponent(u.username) || undefined, password: decodeURIComponent(u.password) || undefined,
		db: Number(u.pathname.slice(1) || 0), maxRetriesPerRequest: null,
	};
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// percentile reads the p-th quantile of sorted samples (nearest rank), as emqbench does.
function percentile(sorted, p) {
	if (sorted.length === 0) return 0;
	const i = Math.round(p * sorted.length) - 1;
	return sorted[Math.min(Math.max(i, 0), sorted.length - 1)];
}

// redisCPU is Redis's CPU so far in microseconds (INFO cpu: user + system).
async function redisCPU(rdb) {
	const info = await rdb.info('cpu');
	const field = (name) => Number(infoField(info, name));
	return Math.round((field('used_cpu_user') + field('used_cpu_sys')) * 1e6);
}

function infoField(info, name) {
	for (const line of info.split('\n')) {
		const [k, v] = line.trim().split(':');
		if (k === name) return v;
	}
	return '?';
}

// procMemory reads VmRSS and VmHWM of a process from /proc (Linux).
function procMemory(pid) {
	try {
		const status = readFileSync(`/proc/${pid}/status`, 'utf8');
		const get = (name) => (new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(status) || [, '?'])[1];
		return `VmRSS ${get('VmRSS')}, VmHWM (peak) ${get('VmHWM')}`;
	} catch {
		return 'VmRSS ?, VmHWM (peak) ?';
	}
}

// table prints rows as emqbench's tabwriter does (right-aligned cells,
// two spaces of padding, each column as wide as its widest cell).
function table(rows) {
	const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => [...r[c]].length)) + 2);
	return rows.map((r) => r.map((cell, c) => cell.padStart(widths[c])).join('')).join('\n');
}

// producer is the producer process: -producers loops of queue.add, one job
// at a time each, holding the backlog bound with the completions the
// Worker's process reports.
async function producer(o) {
	const queue = new Queue(o.queue, { connection: connection(o.redis) });
	await queue.waitUntilReady();
	let completed = 0;
	let added = 0; // reserved, as emqbench's reserve: counted before the call
	let measuring = false;
	let stopped = false;
	let errors = 0;
	let firstErr = '';
	const lat = [];
	process.on('message', (m) => {
		if (m.completed !== undefined) completed = m.completed;
		if (m.measuring !== undefined) measuring = m.measuring;
		if (m.stop) stopped = true;
	});
	process.on('disconnect', () => { stopped = true; });
	const opts = { removeOnComplete: true };
	const loop = async () => {
		while (!stopped) {
			if (added - completed > o.backlog) {
				await sleep(1);
				continue;
			}
			added++;
			const start = performance.now();
			try {
				await queue.add('bench', payload, opts);
				if (measuring) lat.push(performance.now() - start);
			} catch (err) {
				added--;
				errors++;
				firstErr ||= String(err && err.stack ? err.stack : err);
				await sleep(10);
			}
		}
	};
	process.send({ ready: true });
	await Promise.all(Array.from({ length: o.producers }, loop));
	lat.sort((a, b) => a - b);
	process.send({ calls: lat.length, p50: percentile(lat, 0.5), p99: percentile(lat, 0.99), errors, firstErr, memory: procMemory(process.pid) });
	await queue.close();
	process.disconnect();
}

// worker is the Worker's process and the clock: it starts the producer,
// warms up, measures, stops both and prints the figures.
async function worker(o) {
	const conn = connection(o.redis);
	// A Redis that is not there fails the run at once; one that stops
	// answering, by the watchdog (BullMQ's clients retry without end).
	const admin = new IORedis({ ...conn, maxRetriesPerRequest: 1, retryStrategy: () => null });
	await admin.ping();
	const watchdog = setTimeout(() => {
		console.error(`bullmq e2e: no figures ${(o.warmupMs + o.durationMs) / 1000 + 60}s after the start`);
		process.exit(1);
	}, o.warmupMs + o.durationMs + 60e3);
	watchdog.unref();
	const bullmqVersion = createRequire(import.meta.url)('bullmq/package.json').version;
	let completed = 0;
	let measuring = false;
	let errors = 0;
	let firstErr = '';
	const e2e = []; // ms from add (job.timestamp) to completed (job.finishedOn), both Date.now() of this machine
	const w = new Worker(o.queue, async () => {}, { connection: conn, concurrency: o.concurrency, autorun: false });
	w.on('completed', (job) => {
		completed++;
		if (measuring) e2e.push(job.finishedOn - job.timestamp);
	});
	const fail = (err) => {
		errors++;
		firstErr ||= String(err && err.stack ? err.stack : err);
	};
	w.on('failed', (_job, err) => fail(err));
	w.on('error', fail);

	const child = fork(fileURLToPath(import.meta.url), [...process.argv.slice(2), '-role', 'producer', '-queue', o.queue]);
	const messages = [];
	let wake = () => {};
	child.on('message', (m) => { messages.push(m); wake(); });
	let stopping = false;
	child.on('error', (err) => { // a send to a producer that has gone: it exits by itself once stopped
		if (!stopping) fail(err);
	});
	const childExit = new Promise((resolve) => child.on('exit', (code, signal) => { resolve({ code, signal }); wake(); }));
	let exited = false;
	childExit.then(() => { exited = true; });
	const next = async () => {
		while (messages.length === 0) {
			if (exited) throw new Error('bullmq e2e: the producer process exited early');
			await new Promise((resolve) => { wake = resolve; });
		}
		return messages.shift();
	};
	process.on('SIGINT', () => { child.kill(); process.exit(130); });
	process.on('SIGTERM', () => { child.kill(); process.exit(143); });

	await next(); // ready
	let told = -1;
	const tell = setInterval(() => { // the producer's backlog bound, every 2 ms at most
		if (completed !== told && child.connected) {
			told = completed;
			child.send({ completed });
		}
	}, 2);
	w.run().catch(fail);
	await sleep(o.warmupMs);

	measuring = true;
	child.send({ measuring: true });
	const cpu0 = await redisCPU(admin);
	const done0 = completed;
	const t0 = performance.now();
	await sleep(o.durationMs);
	const done = completed - done0;
	const elapsed = (performance.now() - t0) / 1000;
	const cpu1 = await redisCPU(admin);
	measuring = false;
	clearInterval(tell); // the producer stops adding: its backlog bound is done with
	stopping = true;
	child.send({ measuring: false, stop: true });
	const prod = await next();
	await childExit;
	await w.close();
	const memory = infoField(await admin.info('memory'), 'used_memory_human').trim();
	await admin.quit();

	const rate = done / elapsed;
	const perJob = done > 0 ? (cpu1 - cpu0) / done : 0;
	e2e.sort((a, b) => a - b);
	const allErrors = String(errors + prod.errors);
	const f2 = (x) => x.toFixed(2);
	console.log(`bullmq ${bullmqVersion} (node ${process.version}): ${o.redis}, producer process (${o.producers} add loops, one queue.add at a time each), Worker concurrency ${o.concurrency}, removeOnComplete, backlog ${o.backlog}, warmup ${o.warmup}, measured ${o.duration}\n`);
	console.log(table([
		['shape', 'via', 'jobs/s', 'redis cpu µs/job', 'route', 'calls/s', 'p50 ms', 'p99 ms', 'errors'],
		['bullmq', 'e2e', rate.toFixed(0), perJob > 0 ? perJob.toFixed(1) : '-', 'add', (prod.calls / elapsed).toFixed(0), f2(prod.p50), f2(prod.p99), allErrors],
		['', '', '', '', 'add to completed', (e2e.length / elapsed).toFixed(0), f2(percentile(e2e, 0.5)), f2(percentile(e2e, 0.99)), allErrors],
	]));
	console.log(`\nbullmq worker pid ${process.pid}: ${procMemory(process.pid)}; producer: ${prod.memory}`);
	console.log(`redis ${conn.host}:${conn.port}: used_memory_human ${memory}`);
	if (firstErr || prod.firstErr) console.error(`bullmq e2e: first error: ${firstErr || prod.firstErr}`);
	if (o.summary) {
		writeFileSync(o.summary, `shape\tvia\tjobs/s\tredis cpu µs/job\nbullmq\te2e\t${rate.toFixed(1)}\t${perJob > 0 ? perJob.toFixed(2) : '-'}\n`);
	}
	if (done === 0) throw new Error('bullmq e2e: no job completed in the measured window');
}

try {
	const o = parseFlags(process.argv.slice(2));
	await (o.role === 'producer' ? producer(o) : worker(o));
} catch (err) {
	if (err instanceof FlagError) {
		console.error(err.message.startsWith('usage:') ? err.message : `bullmq e2e: ${err.message}`);
		process.exit(err.message.startsWith('usage:') ? 0 : 2);
	}
	console.error(`bullmq e2e: ${err && err.stack ? err.stack : err}`);
	process.exit(1);
}
