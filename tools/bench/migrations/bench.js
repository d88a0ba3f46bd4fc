// Online migration benchmark (issue 21): loads ROWS rows through NDJSON (the ingest rate is the
// peer of the backfill rate), then runs a fixed foreground load (FG_RPS requests/s: half PUT
// of a random row, half GET) for a baseline window, then a type change that rewrites every
// row (`f64 → str using CAST(...)`) with the same load running, then the cutover. Prints, from
// one run: NDJSON ingest rows/s, backfill rows/s and its ratio to ingest, the foreground
// write p99 without and with the migration (and the ratio), and the cutover stall (the
// longest foreground write latency while the cutover ran) and the cutover's own time.
//
//   npm run build && node tools/bench/migrations/bench.js [--rows 1000000] [--load-s 300] [--fg-rps 200] [--baseline-s 10] [--defer-sync 1|0] [--slice-ms 3]
// (--load-s: the load stops after this many seconds and the run goes on with the rows loaded)
// Smoke: node tools/bench/migrations/bench.js --rows 2000 --fg-rps 50 --baseline-s 1
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const https = require('https');
const { startBuiltServer, httpsRequest } = require('../server');

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
// --slice-ms N: the throttle's frame budget (libs/migrations DESIGN.md "Throttle"; default: the migration's default, 3).
const SLICE_MS = arg('slice-ms', undefined);
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

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-migrations-'));
  const { proc, url } = await startBuiltServer(dir, { tenant: TENANT, token: TOKEN, env: { DB_DEFER_BACKFILL_SYNC: String(DEFER_SYNC) } });
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

    const base = foreground(req);
    await sleep(BASELINE_S * 1000);
    base.stop();
    await sleep(200);

    const fg = foreground(req);
    const m0 = performance.now();
    // The default frame sizing (slice_ms, batch_size); only the rows/s ceiling is lifted, so the adaptive throttle alone limits the copy.
    const sub = await req('POST', `${T}/migrations`, { schema: 'bench.m', operations: [{ op: 'change_type', column: 'v', ty: 'str', using: 'CAST(v AS TEXT)' }], throttle: { max_rows_per_s: 1_000_000, ...(SLICE_MS !== undefined ? { slice_ms: SLICE_MS } : {}) } });
    if (sub.status !== 201) throw new Error(`submit ${sub.status} ${JSON.stringify(sub.json)}`);
    let m;
    for (;;) {
      m = (await req('GET', `${T}/migrations/${sub.json.id}`)).json;
      if (m.state === 'ReadyToCutover' || m.state === 'Failed') break;
      await sleep(25);
    }
    if (m.state === 'Failed') throw new Error(`migration failed: ${m.reason}`);
    const backfillS = (performance.now() - m0) / 1000;
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
      ['rows', ROWS, `${ROWS < MAX_ROWS ? `(the load stopped at --load-s ${LOAD_S}) ` : ''}backfill frames ${DEFER_SYNC ? 'deferred sync (default)' : 'each with its own fsync (--defer-sync 0)'}`],
      ['NDJSON ingest rows/s (peer)', Math.round(ingestRate), `${(ingestMs / 1000).toFixed(1)} s of _batch requests, no other load`],
      ['backfill rows/s', Math.round(ROWS / backfillS), `${((ROWS / backfillS / ingestRate) * 100).toFixed(0)}% of ingest (target ≥ 30%); ${backfillS.toFixed(1)} s submit → ReadyToCutover (row count included), foreground load on; throttle ${JSON.stringify(m.throttle)}`],
      [`foreground write p99 ms, no migration (${FG_RPS} req/s, half PUT)`, basep99.toFixed(1), `${base.writes.length} writes, p50 ${pct(base.writes.map(([, l]) => l), 50).toFixed(1)} ms`],
      ['foreground write p99 ms, during backfill', migp99.toFixed(1), `${(migp99 / basep99).toFixed(2)}× (target ≤ 2×); ${during.length} writes, p50 ${pct(during, 50).toFixed(1)} ms`],
      ['cutover request ms', (c1 - c0).toFixed(0), `writes fenced ${cs.fenced_ms ?? '?'} ms; ${cs.from_shadow ?? '?'} rows from the dual-written shadow, ${cs.reshaped ?? '?'} reshaped`],
      ['cutover stall ms (longest write overlapping it)', stall.toFixed(0), `${refused} writes answered 503 retry (target ≤ 100 ms)`],
    ];
    const w = Math.max(...rows.map((r) => r[0].length));
    for (const [k, v, note] of rows) console.log(`${k.padEnd(w)}  ${String(v).padStart(10)}  ${note}`);
  } finally {
    proc.kill('SIGTERM');
    agent.destroy();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
