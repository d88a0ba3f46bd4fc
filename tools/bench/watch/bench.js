#!/usr/bin/env node
/**
 * Watch streams under load: N subscribers (filtered queries over 10 tables, held by a separate
 * process) while rows are written at a fixed rate, against the built server.
 *
 *   npm run build && node tools/bench/watch/bench.js [--subscribers 200] [--tables 10] [--rate 2000]
 *       [--duration 10] [--preload 10000] [--big 1000000] [--window 50] [--idle 3] [--subs-nice 0] [--busy-slice-us 500]
 *
 * In one run, one server: (1) writes at --rate rows/s for --duration s with no subscriber (the
 * peer: write p50/p99 without watch); (2) server RSS, then --subscribers streams opened and left
 * idle --idle s, RSS again: memory per idle subscriber; (3) the same write load with them:
 * write p50/p99 and commit → event latency (from the write's acknowledgement to the event's
 * arrival in the subscriber process, every delivery), and whether every expected delivery came;
 * (3b) the subscribers closed, the same load again without them: the peer is (1) and (3b) pooled,
 * before and after (3), so that what grows through a run (heap, caches, store) weighs on both sides;
 * for (1), (3) and (3b) also what the server saw (server-side.js: its PUT latency histogram, its
 * event loop's delay) and the CPU each process used (cpu.js), to tell the server's own work from
 * the client's and the scheduler's;
 * (4) once the table of (1)-(3) is printed and the subscribers are closed, matching work on a
 * --big row table loaded through NDJSON _batch (big.js; --big 0 skips it): one subscriber, a few
 * hundred updates, the server's db_watch_match_evaluations_total per changed row, beside what
 * re-running the query per burst would cost (one POST /sql of it: its time and the rows it reads).
 * The full size (the defaults) takes about 2-3 minutes on a quiet machine (README.md).
 */
'use strict';
const { fork } = require('child_process');
const fs = require('fs');
const https = require('https');
const os = require('os');
const path = require('path');
const { startBuiltServer, httpsRequest } = require('../server');
const { request, numberOption } = require('../request');
const { ingest, matchingOnBigTable } = require('./big');
const { serverSide, pooled } = require('./server-side');
const { cpuPhase } = require('./cpu');
const { loadOptions } = require('./options');

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
const TENANT = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const TOKEN = 'bench-watch-token-0123456789';
const T = `/v1/tenants/${TENANT}`;
const CLASSES = 4; // subscriber i follows rows with v % 4 = i % 4 of table i % TABLES

const now = () => performance.timeOrigin + performance.now();
const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (xs, p) => (xs.length ? xs[Math.min(xs.length - 1, Math.floor(xs.length * p))] : NaN);
const toml = (name) => `namespace = "bench"\ntable = "${name}"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "v"\nty = "i64"\n[[columns]]\nname = "pad"\nty = "str"\n`;

function rssKiB(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-bench-watch-'));
  const { proc, url } = await startBuiltServer(dir, {
    tenant: TENANT,
    token: TOKEN,
    env: {
      // diagnostics (README.md): node options for the server (a CPU profile: cpu-profile.js) and where it writes it
      ...(process.env.WATCH_SERVER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.WATCH_SERVER_NODE_OPTIONS } : {}),
      ...(process.env.PROFILE_DIR ? { PROFILE_DIR: process.env.PROFILE_DIR } : {}),
      ...(process.env.HEAP_LIVE ? { HEAP_LIVE: process.env.HEAP_LIVE } : {}),
      ...(BUSY_SLICE_US ? { DB_WATCH_BUSY_SLICE_US: String(BUSY_SLICE_US) } : {}),
      DB_WATCH_COALESCE_MS: String(WINDOW),
      DB_WATCH_MAX: String(SUBS + 10),
      DB_RATE_LIMIT_RPS: '0',
      DB_LOG_LEVEL: 'error',
    },
  });
  const ca = fs.readFileSync(path.join(dir, 'tls/cert.pem'), 'utf8');
  const agent = new https.Agent({ keepAlive: true, maxSockets: 128, ca });
  const call = (method, p, body, type) => request(agent, url, TOKEN, method, p, body, type);
  const scrape = async () => (await httpsRequest(agent, url, TOKEN, 'GET', '/metrics')).text;
  const metric = async (name) => {
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(await scrape());
    return m ? Number(m[1]) : 0;
  };
  // phase marks for the server's CPU profile (cpu-profile.js), when one is recorded
  const profiling = /cpu-profile/.test(process.env.WATCH_SERVER_NODE_OPTIONS ?? '');
  const mark = () => (profiling ? proc.kill('SIGWINCH') : undefined);
  let subs = null;
  try {
    for (let t = 0; t < TABLES; t++) await call('POST', `${T}/schemas`, toml(`t${t}`), 'text/plain');
    for (let t = 0; t < TABLES; t++) await ingest(call, T, `t${t}`, 1, PRELOAD);
    process.stderr.write(`preloaded ${TABLES} × ${PRELOAD} rows\n`);

    let nextId = 10_000_000;
    /** --rate writes/s for --duration s (PUT, durable); ack time per "bench.tN:id" and each write's latency. */
    const writeLoad = async (seconds = DURATION) => {
      const acks = new Map();
      const lat = [];
      const vals = new Map();
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
          const s = now();
          const p = call('PUT', `${T}/rows/bench.${table}/${id}`, { id, v, pad: 'y' }).then(() => {
            const a = now();
            acks.set(`bench.${table}:${id}`, a);
            lat.push(a - s);
            inflight.delete(p);
          });
          inflight.add(p);
          sent++;
        }
        await sleep(5);
      }
      await Promise.all(inflight);
      lat.sort((a, b) => a - b);
      return { acks, lat, vals, rate: sent / ((now() - t0) / 1000) };
    };

    await writeLoad(Math.min(3, DURATION)); // warm-up (JIT, caches): not measured
    process.stderr.write('phase 1: writes without subscribers\n');
    const srv1 = await serverSide(scrape);
    mark();
    const cpu1 = cpuPhase({ server: proc.pid, bench: process.pid });
    const before = await writeLoad();
    const use1 = cpu1.end();
    mark();
    const server1 = await srv1.end();
    await sleep(1000);
    const rss0 = rssKiB(proc.pid);
    subs = fork(path.join(__dirname, 'subscribers.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    if (SUBS_NICE) os.setPriority(subs.pid, SUBS_NICE);
    const reply = (key) => new Promise((r) => subs.once('message', (m) => (m[key] !== undefined ? r(m) : null)));
    const paths = Array.from({ length: SUBS }, (_, i) => `${T}/watch?sql=${encodeURIComponent(`SELECT id, v FROM bench.t${i % TABLES} WHERE v % ${CLASSES} = ${i % CLASSES}`)}`);
    process.stderr.write(`phase 2: ${SUBS} subscribers, idle ${IDLE} s\n`);
    subs.send({ open: { url, token: TOKEN, ca, paths } });
    await reply('ready');
    await sleep(IDLE * 1000);
    const rss1 = rssKiB(proc.pid);
    const subscribers = await metric(`db_watch_subscribers\\{tenant="${TENANT}"\\}`);

    process.stderr.write('phase 3: writes with subscribers\n');
    const ev0 = await metric('db_watch_match_evaluations_total');
    const rc0 = await metric('db_watch_row_changes_total');
    const fs0 = await metric('db_watch_fanout_seconds_total');
    const ft0 = await metric('db_watch_fanout_turns_total');
    const fg0 = await metric('db_watch_fanout_grouped_total');
    const srv3 = await serverSide(scrape);
    mark();
    const cpu3 = cpuPhase({ server: proc.pid, bench: process.pid, subscribers: subs.pid });
    const during = await writeLoad();
    const use3 = cpu3.end();
    mark();
    const server3 = await srv3.end();
    await sleep(WINDOW + 1000);
    const ev1 = await metric('db_watch_match_evaluations_total');
    const rc1 = await metric('db_watch_row_changes_total');
    const fs1 = await metric('db_watch_fanout_seconds_total');
    const ft1 = await metric('db_watch_fanout_turns_total');
    const fg1 = await metric('db_watch_fanout_grouped_total');
    subs.send({ report: true });
    const rep = await reply('report');
    const delivery = [];
    let expected = 0;
    for (const [k, v] of during.vals) {
      const table = Number(/t(\d+):/.exec(k)[1]);
      for (let i = 0; i < SUBS; i++) if (i % TABLES === table && i % CLASSES === v % CLASSES) expected++;
    }
    for (const [k, times] of Object.entries(rep.report)) {
      const ack = during.acks.get(k);
      if (ack !== undefined) for (const t of times) delivery.push(Math.max(0, t - ack));
    }
    delivery.sort((a, b) => a - b);
    // the subscribers closed, the same load once more without them: the peer is phases 1 and 3b
    // together, before and after the phase with subscribers (a server's heap, caches and store
    // grow through a run: the first major GCs came in phase 3 with no subscriber at all, so a peer
    // taken only before measured the time order as much as the subscribers)
    subs.send({ close: true });
    await new Promise((r) => subs.once('exit', r));
    subs = null;
    await sleep(1000);
    process.stderr.write('phase 3b: writes without subscribers again\n');
    const srv5 = await serverSide(scrape);
    const cpu5 = cpuPhase({ server: proc.pid, bench: process.pid });
    const after = await writeLoad();
    const use5 = cpu5.end();
    const server5 = await srv5.end();
    const without = { lat: [...before.lat, ...after.lat].sort((a, b) => a - b), rate: (before.rate + after.rate) / 2 };
    const serverWithout = pooled(server1, server5);

    const ratio = pct(during.lat, 0.99) / pct(without.lat, 0.99);
    const perSub = ((rss1 - rss0) / SUBS);
    console.log(`\nwatch benchmark: ${SUBS} subscribers (${subscribers} open) over ${TABLES} tables, ${RATE} rows/s target for ${DURATION} s, window ${WINDOW} ms${SUBS_NICE ? `, subscribers' process at nice ${SUBS_NICE}` : ''}`);
    console.log('| measure | without subscribers (phases 1 and 3b) | with subscribers (phase 3) | ratio | target |');
    console.log('|---|---|---|---|---|');
    console.log(`| writes/s achieved | ${f(without.rate, 0)} | ${f(during.rate, 0)} | | ${RATE} |`);
    console.log(`| write p50 ms | ${f(pct(without.lat, 0.5), 2)} | ${f(pct(during.lat, 0.5), 2)} | ${f(pct(during.lat, 0.5) / pct(without.lat, 0.5), 2)}× | |`);
    console.log(`| write p99 ms | ${f(pct(without.lat, 0.99), 2)} | ${f(pct(during.lat, 0.99), 2)} | ${f(ratio, 2)}× | ≤ 1.5× ${ratio <= 1.5 ? 'met' : 'MISSED'} |`);
    console.log(`| write p99 ms without: phase 1 (before) / phase 3b (after); ratio to each | ${f(pct(before.lat, 0.99), 2)} / ${f(pct(after.lat, 0.99), 2)} | | ${f(pct(during.lat, 0.99) / pct(before.lat, 0.99), 2)}× / ${f(pct(during.lat, 0.99) / pct(after.lat, 0.99), 2)}× | |`);
    console.log(`| server-side write p50 / p99 ms (histogram buckets) | ${f(serverWithout.p50, 2)} / ${f(serverWithout.p99, 2)} (p99 ${f(server1.p99, 2)} before, ${f(server5.p99, 2)} after) | ${f(server3.p50, 2)} / ${f(server3.p99, 2)} | ${f(server3.p99 / serverWithout.p99, 2)}× | |`);
    console.log(`| server event-loop delay p99 / max ms (phase 1; 3b) | ${f(server1.loopP99)} / ${f(server1.loopMax)}; ${f(server5.loopP99)} / ${f(server5.loopMax)} | ${f(server3.loopP99)} / ${f(server3.loopMax)} | | |`);
    const gcs = (x) => `major ${x.gc.major.count} (${f(x.gc.major.ms)} ms), minor ${x.gc.minor.count} (${f(x.gc.minor.ms)} ms)`;
    console.log(`| server GC pauses: count (total) (phase 1; 3b) | ${gcs(server1)}; ${gcs(server5)} | ${gcs(server3)} | | |`);
    console.log(`| server: longest fan-out turn ms; stream reads behind their buffer | | ${f(server3.longestTurn, 2)}; ${server3.catchUps} | | |`);
    const cores = (u, k) => (u.procs[k] ? `${f(u.procs[k].cores, 2)} (sys ${f(u.procs[k].sys, 2)})` : '');
    const host = (u) => `${f(u.host.cores, 2)}, ${f(u.host.steal)} %, ${f(u.host.load, 2)}`;
    console.log(`| CPU cores: server (of it kernel) (phase 1; 3b) | ${cores(use1, 'server')}; ${cores(use5, 'server')} | ${cores(use3, 'server')} | | |`);
    console.log(`| CPU cores: bench writer / subscribers' process | ${cores(use1, 'bench')}; ${cores(use5, 'bench')} | ${cores(use3, 'bench')} / ${cores(use3, 'subscribers')} | | |`);
    console.log(`| host: busy cores of ${use1.host.cpus}, steal %, load average (phase 1; 3b) | ${host(use1)}; ${host(use5)} | ${host(use3)} | | |`);
    // the fan-out's turns (take frames, match, serialize, write the socket), timed by the server: its event loop's time per second
    console.log(`| server: fan-out main-thread ms/s (µs per turn, ≈ per stream and burst) | | ${f(((fs1 - fs0) * 1000) / DURATION)} (${f(((fs1 - fs0) * 1e6) / Math.max(1, ft1 - ft0))} µs × ${f((ft1 - ft0) / DURATION, 0)}/s) | | |`);
    // bursts delivered to parked streams in one turn per window (their group's), against all the streams' bursts
    console.log(`| server: bursts delivered in a group's turn (of all) | | ${f(((fg1 - fg0) * 100) / Math.max(1, ft1 - ft0))} % | | |`);
    console.log(`| commit → event p50 ms | | ${f(pct(delivery, 0.5))} | | |`);
    console.log(`| commit → event p99 ms | | ${f(pct(delivery, 0.99))} | | ≤ ${WINDOW + 50} ${pct(delivery, 0.99) <= WINDOW + 50 ? 'met' : 'MISSED'} |`);
    console.log(`| deliveries (expected) | | ${delivery.length} (${expected}) | | all |`);
    console.log(`| server RSS KiB | ${rss0} | ${rss1} (idle) | | |`);
    console.log(`| RSS per idle subscriber KiB | | ${f(perSub)} | | ≤ 64 ${perSub <= 64 ? 'met' : 'MISSED'} |`);
    console.log(`| match evaluations per examined row change | | ${f((ev1 - ev0) / Math.max(1, rc1 - rc0))} | | ≤ 2 |`);
    // subscribers compiled alike share one match per burst: 20 subscribers per table would examine
    // each write 20 times; the distinct queries per table (2 here: i % tables and i % 4 share parity) once each
    console.log(`| row changes examined per write (shared queries once) | | ${f((rc1 - rc0) / Math.max(1, during.lat.length), 2)} | | |`);
    // (the subscribers were closed before phase 3b, and so before the big table is loaded: its load is not what they measure)
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
