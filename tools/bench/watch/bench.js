#!/usr/bin/env node
/**
 * Watch streams under load: N subscribers (filtered queries over 10 tables, held by a separate
 * process) while rows are written at a fixed rate, against the built server.
 *
 *   npm run build && node tools/bench/watch/bench.js [--subscribers 200] [--tables 10] [--rate 2000]
 *       [--duration 10] [--repeats 3] [--preload 10000] [--big 1000000] [--window 50] [--idle 3]
 *       [--subs-nice 0] [--busy-slice-us 500] [--trace 0] [--idle-subs 1000]
 *
 * In one run, one server, after a warm-up: phases of writes at --rate rows/s without (W) and with
 * (S) subscribers, interleaved and balanced in time: W0 (--duration/2 s), then --repeats times
 * [--subscribers streams opened by a separate process (subscribers.js) and left idle --idle s,
 * S_r (--duration s: write latency,
 * commit → event latency from the write's acknowledgement to the event's arrival, every delivery
 * against the expected ones), the streams closed, W_r (--duration s; the last --duration/2 s)].
 * Each S is compared with the W just before and after it (the ratio per repeat), and all S with
 * all W pooled (as many writes on each side): what grows through a run (heap, caches, store) and
 * a noisy stretch of the host weigh on both sides, and one noisy stretch does not decide the
 * ratio. Per phase also what the server saw (server-side.js: its PUT latency histogram, event-loop
 * delay, GC pauses, the fan-out's longest turn, catch-ups) and the CPU each process used (cpu.js);
 * with --trace 1 what each phase's slow writes overlapped (trace.js, slow-writes.js).
 * --repeats 0 skips the write phases.
 * Before the write phases (on a server that has held no stream yet), server memory per idle
 * subscriber (idle-memory.js): --idle-subs streams opened, no writes, the server's memory read
 * after forced full GCs (memory.js, preloaded with --expose-gc) before, while they are open, and
 * after they closed (--idle-subs 0 skips it).
 * Then, once the subscribers are closed, matching work on a --big row table loaded through NDJSON
 * _batch (big.js; --big 0 skips it): one subscriber, a few hundred updates, the server's
 * db_watch_match_evaluations_total per changed row, beside what re-running the query per burst
 * would cost (one POST /sql of it: its time and the rows it reads).
 * The full size with --big 0 takes about 2 minutes on a quiet machine (README.md).
 */
'use strict';
const fs = require('fs');
const https = require('https');
const os = require('os');
const path = require('path');
const { startBuiltServer, httpsRequest, NODE_ARGS } = require('../server');
const { request, numberOption } = require('../request');
const { ingest, matchingOnBigTable } = require('./big');
const { serverSide } = require('./server-side');
const { report } = require('./report');
const { readTrace } = require('./slow-writes');
const { cpuPhase } = require('./cpu');
const { loadOptions } = require('./options');
const { idleMemory, memoryTable, subscriberPaths, forkSubscribers } = require('./idle-memory');

const args = process.argv.slice(2);
const opt = (name, def) => numberOption(args, name, def);
const { SUBS, TABLES, RATE, DURATION, WINDOW } = loadOptions(args, { duration: 10 });
const PRELOAD = opt('preload', 10_000);
const BIG = opt('big', 1_000_000);
const IDLE = opt('idle', 3);
/** A diagnostic: the subscribers' process runs at this nice value (0: as the server; 19: it yields the CPUs to it). */
const SUBS_NICE = opt('subs-nice', 0);
/** The server's DB_WATCH_BUSY_SLICE_US (0: its default, 500). */
const BUSY_SLICE_US = opt('busy-slice-us', 0);
/** Phases with subscribers, each between two without (README.md): the ratio per repeat and pooled (0: no write phases). */
const REPEATS = Math.max(0, opt('repeats', 3));
/** Streams of the memory phase (idle-memory.js; 0 skips it): enough that their memory dwarfs what two readings differ by. */
const IDLE_SUBS = opt('idle-subs', 1000);
/** 1: the server records its GC pauses, fan-out turns, catch-ups and loop stalls (trace.js), and the bench says what each phase's slow writes overlapped (slow-writes.js). */
const TRACE = opt('trace', 0) > 0;
const TENANT = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const TOKEN = 'bench-watch-token-0123456789';
const T = `/v1/tenants/${TENANT}`;
const CLASSES = 4; // subscriber i follows rows with v % 4 = i % 4 of table i % TABLES

// the host's monotonic clock (CLOCK_MONOTONIC, the same in every process): the subscribers' process
// and the server's trace (trace.js) stamp with it too, so their times align to the µs (timeOrigin
// + performance.now() differed by ms between processes)
const now = () => Number(process.hrtime.bigint()) / 1e6;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const toml = (name) => `namespace = "bench"\ntable = "${name}"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "v"\nty = "i64"\n[[columns]]\nname = "pad"\nty = "str"\n`;

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-bench-watch-'));
  const traceFile = TRACE ? path.join(dir, 'trace.jsonl') : null;
  const memFile = path.join(dir, 'memory.jsonl');
  // (memory.js: forced GCs and memory readings on SIGURG, for the memory phase; --expose-gc gives it gc())
  const nodeOptions = [process.env.WATCH_SERVER_NODE_OPTIONS, TRACE ? `-r ${path.join(__dirname, 'trace.js')}` : '', `-r "${path.join(__dirname, 'memory.js')}"`].filter(Boolean).join(' ');
  const { proc, url } = await startBuiltServer(dir, {
    tenant: TENANT,
    token: TOKEN,
    nodeArgs: [...NODE_ARGS, '--expose-gc'],
    env: {
      MEM_FILE: memFile,
      // diagnostics (README.md): node options for the server (a CPU profile: cpu-profile.js; the trace: trace.js) and where they write
      ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
      ...(traceFile ? { TRACE_FILE: traceFile } : {}),
      ...(process.env.PROFILE_DIR ? { PROFILE_DIR: process.env.PROFILE_DIR } : {}),
      ...(process.env.HEAP_LIVE ? { HEAP_LIVE: process.env.HEAP_LIVE } : {}),
      ...(BUSY_SLICE_US ? { DB_WATCH_BUSY_SLICE_US: String(BUSY_SLICE_US) } : {}),
      DB_WATCH_COALESCE_MS: String(WINDOW),
      DB_WATCH_MAX: String(Math.max(SUBS, IDLE_SUBS) + 10),
      DB_RATE_LIMIT_RPS: '0',
      DB_LOG_LEVEL: 'error',
    },
  });
  const ca = fs.readFileSync(path.join(dir, 'tls/cert.pem'), 'utf8');
  const agent = new https.Agent({ keepAlive: true, maxSockets: 128, ca });
  const call = (method, p, body, type) => request(agent, url, TOKEN, method, p, body, type);
  const scrape = async () => (await httpsRequest(agent, url, TOKEN, 'GET', '/metrics')).text;
  const valueIn = (text, name) => {
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : 0;
  };
  const metric = async (name) => valueIn(await scrape(), name);
  const FANOUT = { ev: 'db_watch_match_evaluations_total', rc: 'db_watch_row_changes_total', fs: 'db_watch_fanout_seconds_total', ft: 'db_watch_fanout_turns_total', fg: 'db_watch_fanout_grouped_total' };
  const counters = async () => {
    const text = await scrape();
    return Object.fromEntries(Object.entries(FANOUT).map(([k, name]) => [k, valueIn(text, name)]));
  };
  // phase marks for the server's CPU profile (cpu-profile.js), when one is recorded: the first phase without and the first with subscribers
  const profiling = /cpu-profile/.test(process.env.WATCH_SERVER_NODE_OPTIONS ?? '');
  const mark = () => (profiling ? proc.kill('SIGWINCH') : undefined);
  let subs = null;
  try {
    for (let t = 0; t < TABLES; t++) await call('POST', `${T}/schemas`, toml(`t${t}`), 'text/plain');
    for (let t = 0; t < TABLES; t++) await ingest(call, T, `t${t}`, 1, PRELOAD);
    process.stderr.write(`preloaded ${TABLES} × ${PRELOAD} rows\n`);

    // memory per idle subscriber first, on a server that has held no stream yet: the room streams
    // opened and closed before would leave in its heap and malloc arenas would be reused by the
    // measured ones, and their memory undercounted (idle-memory.js); its forced GCs fall before
    // the first write phase, W0 as S1
    let memory = null;
    if (IDLE_SUBS > 0) {
      process.stderr.write(`memory: ${IDLE_SUBS} idle subscribers, readings after forced GCs\n`);
      memory = memoryTable(await idleMemory({ proc, memFile, dir, url, token: TOKEN, ca, T, n: IDLE_SUBS, tables: TABLES, classes: CLASSES, idle: IDLE, metric, tenant: TENANT, nodeArgs: [...NODE_ARGS, '--expose-gc'] }));
    }

    let nextId = 10_000_000;
    /** --rate writes/s for `seconds` (PUT, durable); ack time per "bench.tN:id", each write's latency, and with --trace each write's {s, a, p}. */
    const writeLoad = async (seconds) => {
      const acks = new Map();
      const lat = [];
      const vals = new Map();
      const writes = [];
      const t0 = now();
      let sent = 0;
      const inflight = new Set();
      while (now() - t0 < seconds * 1000) {
        const due = Math.floor(((now() - t0) / 1000) * RATE);
        while (sent < due && inflight.size < 512) {
          const id = nextId++;
          const table = `t${id % TABLES}`;
          const v = Math.floor(Math.random() * 100);
          vals.set(`bench.${table}:${id}`, v);
          const p = `${T}/rows/bench.${table}/${id}`;
          const s = now();
          const done = call('PUT', p, { id, v, pad: 'y' }).then(() => {
            const a = now();
            acks.set(`bench.${table}:${id}`, a);
            lat.push(a - s);
            if (TRACE) writes.push({ s, a, p });
            inflight.delete(done);
          });
          inflight.add(done);
          sent++;
        }
        await sleep(5);
      }
      await Promise.all(inflight);
      lat.sort((a, b) => a - b);
      return { acks, lat, vals, writes, rate: sent / ((now() - t0) / 1000) };
    };

    /** One measured phase of writes: the client's latencies, the server's view (server-side.js), the CPU used (cpu.js). */
    const phase = async (seconds, pids, marked) => {
      const srv = await serverSide(scrape);
      if (marked) mark();
      const cpu = cpuPhase(pids);
      const t0 = now();
      const load = await writeLoad(seconds);
      const use = cpu.end();
      const t1 = now();
      if (marked) mark();
      return { ...load, use, t0, t1, seconds, server: await srv.end() };
    };

    if (REPEATS > 0) await writeLoad(Math.min(3, DURATION)); // warm-up (JIT, caches): not measured
    // Phases without (W) and with (S) subscribers, interleaved and balanced in time:
    // W0 (half) S1 W1 S2 W2 … S_R W_R (half). Each S is bracketed by the W before and after it
    // (its repeat's peer), and the W phases add up to as many writes as the S phases: what grows
    // through a run (heap, caches, store) and a noisy stretch of the host weigh on both sides.
    const withouts = [];
    const withs = [];
    if (REPEATS > 0) {
      process.stderr.write(`phase W0: writes without subscribers (${DURATION / 2} s)\n`);
      withouts.push(await phase(DURATION / 2, { server: proc.pid, bench: process.pid }, true));
    }
    for (let r = 1; r <= REPEATS; r++) {
      await sleep(1000);
      const forked = forkSubscribers();
      subs = forked.subs;
      if (SUBS_NICE) os.setPriority(subs.pid, SUBS_NICE);
      const reply = forked.reply;
      process.stderr.write(`repeat ${r}: ${SUBS} subscribers, idle ${IDLE} s, then writes with them (${DURATION} s)\n`);
      subs.send({ open: { url, token: TOKEN, ca, paths: subscriberPaths(T, SUBS, TABLES, CLASSES) } });
      await reply('ready');
      await sleep(IDLE * 1000);
      const open = await metric(`db_watch_subscribers\\{tenant="${TENANT}"\\}`);
      const c0 = await counters();
      const S = await phase(DURATION, { server: proc.pid, bench: process.pid, subscribers: subs.pid }, r === 1);
      await sleep(WINDOW + 1000);
      const c1 = await counters();
      subs.send({ report: true });
      const rep = await reply('report');
      const delivery = [];
      let expected = 0;
      for (const [k, v] of S.vals) {
        const table = Number(/t(\d+):/.exec(k)[1]);
        for (let i = 0; i < SUBS; i++) if (i % TABLES === table && i % CLASSES === v % CLASSES) expected++;
      }
      for (const [k, times] of Object.entries(rep.report)) {
        const ack = S.acks.get(k);
        if (ack !== undefined) for (const t of times) delivery.push(Math.max(0, t - ack));
      }
      delivery.sort((a, b) => a - b);
      withs.push({ ...S, open, delivery, expected, fan: Object.fromEntries(Object.keys(FANOUT).map((k) => [k, c1[k] - c0[k]])) });
      // the subscribers closed: the same load without them (the next repeat's W)
      subs.send({ close: true });
      await new Promise((res) => subs.once('exit', res));
      subs = null;
      await sleep(1000);
      const last = r === REPEATS;
      process.stderr.write(`phase W${r}: writes without subscribers (${last ? DURATION / 2 : DURATION} s)\n`);
      withouts.push(await phase(last ? DURATION / 2 : DURATION, { server: proc.pid, bench: process.pid }, false));
    }
    await sleep(400); // (the trace's last flush)
    if (REPEATS > 0) console.log(report({ withouts, withs, trace: traceFile ? readTrace(traceFile) : null }, { SUBS, TABLES, RATE, DURATION, WINDOW, SUBS_NICE }));
    if (memory) console.log(memory);
    // (the subscribers were closed before the last W phase, and so before the big table is loaded: its load is not what they measure)
    if (BIG > 0) console.log(await matchingOnBigTable({ call, metric, url, ca, token: TOKEN, T, rows: BIG, window: WINDOW, classes: CLASSES, toml }));
  } finally {
    subs?.send({ close: true });
    agent.destroy();
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
