// Online migration benchmark (issue 21): loads ROWS rows through NDJSON (the ingest rate is the
// peer of the backfill rate), then runs a fixed foreground load (FG_RPS requests/s: half PUT
// of a random row, half GET) for a baseline window, then a type change that rewrites every
// row (`f64 → str using CAST(...)`) with the same load running, then the cutover. Prints, from
// one run: NDJSON ingest rows/s, backfill rows/s and its ratio to ingest, the foreground
// write p99 without and with the migration (and the ratio), and the cutover stall (the
// longest foreground write latency while the cutover ran) and the cutover's own time.
//
//   npm run build && node tools/bench/migrations/bench.js [--rows 1000000] [--load-s 300] [--fg-rps 200] [--baseline-s 10] [--defer-sync 1|0] [--slice-ms 3] [--piece-us 500] [--hold-ms 0]
//       [--max-rows-per-s N] [--write-buffer-mb 16] [--table-file-mb 2] [--threadpool 4] [--cpu-prof DIR]
// Then, per window (baseline, backfill), where the time went (attribution.js): the server's disk
// writes (/proc/<pid>/io), its GC and event-loop delay (its /metrics, prom-client's process
// metrics), LevelDB's flushes and compactions (its LOG) and how often the slowest writes overlapped one.
// (--load-s: the load stops after this many seconds and the run goes on with the rows loaded)
// Smoke: node tools/bench/migrations/bench.js --rows 2000 --fg-rps 50 --baseline-s 1
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const https = require('https');
const { startBuiltServer, httpsRequest, NODE_ARGS } = require('../server');
const A = require('./attribution');

const TENANT = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const TOKEN = 'bench-migrations-token-0123456789';
const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const MAX_ROWS = arg('rows', 1_000_000);
const LOAD_S = arg('load-s', 300);
let ROWS = MAX_ROWS;
const FG_RPS = arg('fg-rps', 200);
const BASELINE_S = arg('baseline-s', 10);
// --defer-sync 0: backfill frames each with their own fsync (DB_DEFER_BACKFILL_SYNC=0), to compare with the default 1.
const DEFER_SYNC = arg('defer-sync', 1);
// --piece-us N: the server's DB_BACKFILL_PIECE_US (backfill frames prepared in pieces of N µs and cut short for a foreground write; 0: whole).
const PIECE_US = arg('piece-us', 500);
// --hold-ms N: the server's DB_BACKFILL_HOLD_MS (a backfill frame waits up to N ms for a foreground write in flight to be answered; default 0: not held).
const HOLD_MS = arg('hold-ms', 0);
// --slice-ms N: the throttle's frame budget (libs/migrations DESIGN.md "Throttle"; default: the migration's default, 3).
const SLICE_MS = arg('slice-ms', undefined);
// --max-rows-per-s N: the throttle's ceiling (default 1,000,000: lifted, the adaptive throttle alone limits the copy).
const MAX_ROWS_PER_S = arg('max-rows-per-s', 1_000_000);
// --write-buffer-mb N: LevelDB's write buffer (DB_WRITE_BUFFER_BYTES; the server's default 16 MB).
const WRITE_BUFFER_MB = arg('write-buffer-mb', undefined);
// --table-file-mb N: LevelDB's table file size (DB_TABLE_FILE_BYTES; LevelDB's default 2 MB).
const TABLE_FILE_MB = arg('table-file-mb', undefined);
// --threadpool N: the server's libuv threadpool (UV_THREADPOOL_SIZE; Node's default 4).
const THREADPOOL = arg('threadpool', undefined);
// --cpu-prof DIR: the server writes a V8 CPU profile into DIR when it exits (node --cpu-prof).
const CPU_PROF = (() => {
  const i = process.argv.indexOf('--cpu-prof');
  return i >= 0 ? path.resolve(process.argv[i + 1]) : undefined;
})();
const T = `/v1/tenants/${TENANT}`;
const TOML = 'namespace = "bench"\ntable = "m"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "v"\nty = "f64"\n[[columns]]\nname = "tag"\nty = "str"\n[[indexes]]\nname = "by_tag"\ncolumns = ["tag"]\n';

const pct = (xs, p) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A fixed-rate open-loop load; every write's [start, latency, status] is recorded. */
function foreground(req) {
  const writes = [];
  let stop = false;
  let n = 0;
  const tick = async () => {
    const id = Math.floor(Math.random() * ROWS);
    const t0 = performance.now();
    if (n++ % 2 === 0) {
      const r = await req('PUT', `${T}/rows/bench.m/${id}`, { id, v: n, tag: `t${id % 100}` }).catch(() => ({ status: 0 }));
      writes.push([t0, performance.now() - t0, r.status]);
    } else await req('GET', `${T}/rows/bench.m/${id}`).catch(() => undefined);
  };
  const timer = setInterval(() => { if (!stop) void tick(); }, 1000 / FG_RPS);
  return { writes, stop: () => { stop = true; clearInterval(timer); } };
}

/** A Prometheus sample's value (the first line naming `name` with each label of `labels`, in any order), or NaN. */
function sample(text, name, ...labels) {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || line[name.length] !== ' ' && line[name.length] !== '{') continue;
    if (labels.some((l) => !line.includes(l))) continue;
    return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return NaN;
}

/** Prints, for the baseline ([0] → [1]) and the backfill ([2] → [3]), where the time went. */
function attribution(marks, baseWrites, copyWrites, dir) {
  const gc = (m) => ['minor', 'major', 'incremental'].map((k) => sample(m.metrics, 'db_process_nodejs_gc_duration_seconds_sum', `kind="${k}"`) || 0);
  const windows = [
    ['baseline', marks[0], marks[1], baseWrites],
    ['backfill', marks[2], marks[3], copyWrites],
  ];
  const ldb = A.leveldbDirs(dir)[0];
  const busy = ldb ? A.leveldbActivity(ldb.dir) : { busy: [], stalls: [], compactions: [] };
  // The client's clock (performance.now()) against LevelDB's (epoch ms).
  const toEpoch = (ws) => ws.map(([s, l]) => [performance.timeOrigin + s, performance.timeOrigin + s + l]);
  console.log('\nwhere the time went (tools/bench/migrations/attribution.js):');
  for (const [name, a, b, writes] of windows) {
    const s = (b.t - a.t) / 1000;
    const disk = a.io !== null && b.io !== null ? `disk writes ${((b.io - a.io) / 1e6 / s).toFixed(1)} MB/s` : 'disk writes: no /proc';
    const g0 = gc(a);
    const g1 = gc(b);
    const gcs = ['minor', 'major', 'incremental'].map((k, i) => `${k} ${(((g1[i] - g0[i]) * 1000) / s).toFixed(1)}`).join(', ');
    // Pauses of 10 ms or more (prom-client's GC histogram buckets: 1 ms, 10 ms, 100 ms, 1 s …): the count minus those under 10 ms.
    const over10 = (m) => ['minor', 'major'].reduce((n, k) => n + (sample(m.metrics, 'db_process_nodejs_gc_duration_seconds_count', `kind="${k}"`) || 0) - (sample(m.metrics, 'db_process_nodejs_gc_duration_seconds_bucket', 'le="0.01"', `kind="${k}"`) || 0), 0);
    // prom-client's event-loop delay histogram (a 10 ms timer's period, so an idle loop reads ~10) is reset at every scrape: b's figures are the window's.
    const lag = ['p50', 'p99', 'max'].map((q) => `${q} ${(sample(b.metrics, `db_process_nodejs_eventloop_lag_${q}_seconds`) * 1000 - 10).toFixed(1)}`).join(' / ');
    const epochWrites = toEpoch(writes);
    const o = A.tailOverlap(epochWrites, busy.busy, 99);
    const stalls = busy.stalls.filter(([t]) => t >= performance.timeOrigin + a.t && t <= performance.timeOrigin + b.t).length;
    const cs = A.compactionSummary(busy.compactions ?? [], performance.timeOrigin + a.t, performance.timeOrigin + b.t);
    console.log(`  ${name.padEnd(8)} ${s.toFixed(1)} s: ${disk}; GC ms per s ${gcs} (pauses ≥ 10 ms: ${over10(b) - over10(a)}); event-loop delay beyond its 10 ms timer, ms ${lag}`);
    if (o) console.log(`  ${''.padEnd(8)} LevelDB flushing/compacting ${(100 * o.covered).toFixed(0)}% of it; writes above p99 (${o.cut.toFixed(1)} ms, n ${o.slow}) overlapping one ${(100 * o.slowHit).toFixed(0)}% (all writes ${(100 * o.allHit).toFixed(0)}%); LevelDB write stalls ${stalls}`);
    console.log(`  ${''.padEnd(8)} LevelDB: ${cs.text()}`);
  }
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-migrations-'));
  const env = {
    DB_DEFER_BACKFILL_SYNC: String(DEFER_SYNC),
    DB_BACKFILL_PIECE_US: String(PIECE_US),
    DB_BACKFILL_HOLD_MS: String(HOLD_MS),
    ...(WRITE_BUFFER_MB !== undefined ? { DB_WRITE_BUFFER_BYTES: String(WRITE_BUFFER_MB * 1024 * 1024) } : {}),
    ...(TABLE_FILE_MB !== undefined ? { DB_TABLE_FILE_BYTES: String(TABLE_FILE_MB * 1024 * 1024) } : {}),
    ...(THREADPOOL !== undefined ? { UV_THREADPOOL_SIZE: String(THREADPOOL) } : {}),
  };
  const spawned = performance.now();
  const { proc, url } = await startBuiltServer(dir, { tenant: TENANT, token: TOKEN, env, ...(CPU_PROF ? { nodeArgs: [...NODE_ARGS, '--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`, '--cpu-prof-interval=500'] } : {}) });
  const agent = new https.Agent({ keepAlive: true, rejectUnauthorized: false, maxSockets: 32 });
  const req = (m, p, b, ct) => httpsRequest(agent, url, TOKEN, m, p, b, ct);
  try {
    if ((await req('POST', `${T}/schemas`, TOML, 'text/plain')).status !== 200) throw new Error('schema');
    const CHUNK = 50_000;
    const chunk = Math.min(CHUNK, Math.max(1000, Math.ceil(MAX_ROWS / 20)));
    let loaded = 0;
    // The ingest rate counts the server's time only (each request, from send to answer), as the
    // backfill rate does (submit to ReadyToCutover): the client builds each body before its clock starts.
    let ingestMs = 0;
    // The largest table that loads within --load-s seconds (the issue's "or the largest that loads in 5 minutes").
    while (loaded < MAX_ROWS && ingestMs < LOAD_S * 1000) {
      const lines = [];
      for (let k = loaded; k < Math.min(MAX_ROWS, loaded + chunk); k++) lines.push(JSON.stringify({ id: k, v: k + 0.5, tag: `t${k % 100}` }));
      const body = lines.join('\n') + '\n';
      const t0 = performance.now();
      const r = await req('POST', `${T}/rows/bench.m/_batch`, body, 'application/x-ndjson');
      ingestMs += performance.now() - t0;
      if (r.status !== 200) throw new Error(`ingest ${r.status} ${JSON.stringify(r.json)}`);
      loaded += lines.length;
    }
    ROWS = loaded;
    const ingestRate = ROWS / (ingestMs / 1000);

    const probe = async () => ({ t: performance.now(), io: A.diskWrites(proc.pid), metrics: (await req('GET', '/metrics')).text ?? '' });
    const marks = [await probe()];
    const base = foreground(req);
    await sleep(BASELINE_S * 1000);
    base.stop();
    marks.push(await probe());
    await sleep(200);

    marks.push(await probe());
    const fg = foreground(req);
    const m0 = performance.now();
    // The default frame sizing (slice_ms, batch_size); only the rows/s ceiling is lifted, so the adaptive throttle alone limits the copy.
    const sub = await req('POST', `${T}/migrations`, { schema: 'bench.m', operations: [{ op: 'change_type', column: 'v', ty: 'str', using: 'CAST(v AS TEXT)' }], throttle: { max_rows_per_s: MAX_ROWS_PER_S, ...(SLICE_MS !== undefined ? { slice_ms: SLICE_MS } : {}) } });
    if (sub.status !== 201) throw new Error(`submit ${sub.status} ${JSON.stringify(sub.json)}`);
    let m;
    for (;;) {
      m = (await req('GET', `${T}/migrations/${sub.json.id}`)).json;
      if (m.state === 'ReadyToCutover' || m.state === 'Failed') break;
      await sleep(25);
    }
    if (m.state === 'Failed') throw new Error(`migration failed: ${m.reason}`);
    const backfillS = (performance.now() - m0) / 1000;
    marks.push(await probe());
    const during = fg.writes.filter(([s]) => s >= m0).map(([, l]) => l);
    const c0 = performance.now();
    const cut = await req('POST', `${T}/migrations/${sub.json.id}/cutover`);
    const c1 = performance.now();
    await sleep(500);
    fg.stop();
    if (cut.status !== 200) throw new Error(`cutover ${cut.status} ${JSON.stringify(cut.json)}`);
    const cs = cut.json.cutover ?? {};
    const stallWrites = fg.writes.filter(([s, l]) => s <= c1 && s + l >= c0);
    const stall = Math.max(0, ...stallWrites.map(([, l]) => l));
    const refused = stallWrites.filter(([, , st]) => st === 503).length;
    const basep99 = pct(base.writes.map(([, l]) => l), 99);
    const migp99 = pct(during, 99);
    const rows = [
      ['rows', ROWS, `${ROWS < MAX_ROWS ? `(the load stopped at --load-s ${LOAD_S}) ` : ''}backfill frames ${DEFER_SYNC ? 'deferred sync (default)' : 'each with its own fsync (--defer-sync 0)'}, prepared ${PIECE_US ? `in pieces of ${PIECE_US} µs, cut for a foreground write` : 'whole (--piece-us 0)'}, ${HOLD_MS ? `held up to ${HOLD_MS} ms for a foreground write in flight (--hold-ms)` : 'not held for a foreground write in flight'}`],
      ['NDJSON ingest rows/s (peer)', Math.round(ingestRate), `${(ingestMs / 1000).toFixed(1)} s of _batch requests, no other load`],
      ['backfill rows/s', Math.round(ROWS / backfillS), `${((ROWS / backfillS / ingestRate) * 100).toFixed(0)}% of ingest (target ≥ 30%); ${backfillS.toFixed(1)} s submit → ReadyToCutover (row count included), foreground load on; throttle ${JSON.stringify(m.throttle)}`],
      [`foreground write p99 ms, no migration (${FG_RPS} req/s, half PUT)`, basep99.toFixed(1), `${base.writes.length} writes, p50 ${pct(base.writes.map(([, l]) => l), 50).toFixed(1)} ms`],
      ['foreground write p99 ms, during backfill', migp99.toFixed(1), `${(migp99 / basep99).toFixed(2)}× (target ≤ 2×); ${during.length} writes, p50 ${pct(during, 50).toFixed(1)} ms`],
      ['cutover request ms', (c1 - c0).toFixed(0), `writes fenced ${cs.fenced_ms ?? '?'} ms; ${cs.from_shadow ?? '?'} rows from the dual-written shadow, ${cs.reshaped ?? '?'} reshaped`],
      ['cutover stall ms (longest write overlapping it)', stall.toFixed(0), `${refused} writes answered 503 retry (target ≤ 100 ms)`],
    ];
    const w = Math.max(...rows.map((r) => r[0].length));
    for (const [k, v, note] of rows) console.log(`${k.padEnd(w)}  ${String(v).padStart(10)}  ${note}`);
    if (CPU_PROF) console.log(`cpu profile in ${CPU_PROF}: the backfill ran from ${((m0 - spawned) / 1000).toFixed(2)} to ${((marks[3].t - spawned) / 1000).toFixed(2)} s after the server was spawned`);
    attribution(marks, base.writes, fg.writes.filter(([s]) => s >= m0 && s <= marks[3].t), dir);
  } finally {
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    agent.destroy();
    // A profile is written as the server exits.
    if (CPU_PROF) await Promise.race([exited, sleep(30_000)]);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
