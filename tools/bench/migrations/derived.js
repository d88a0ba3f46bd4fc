// Cutover stall of a table with a full-text field and a vector column (issue 21): the same
// rewrite migration (a column rename: every row, every vector entry's metadata) on the same
// table under the same foreground write load, once with the key-switch cutover (the shadow
// built the postings, vector entries and index during the backfill; the cutover frame switches
// keys) and once with the cutover frame that rewrites every row (DB_MIGRATION_CUTOVER=rewrite,
// earlier versions' way), each on a fresh server. Prints one table with both and the ratio.
//
//   npm run build && node tools/bench/migrations/derived.js [--rows 100000] [--dim 32] [--fg-rps 100]
// Smoke: node tools/bench/migrations/derived.js --rows 1000 --fg-rps 20
//
// `--change index`: a derived-only change instead (an index on `n` added to the same table),
// built in place (no row copied; plan in_place) against DB_MIGRATION_IN_PLACE=off (the rows
// copied into a shadow that builds every derived entry, the vector index included).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const https = require('https');
const { startBuiltServer, httpsRequest, numArg } = require('../server');

const [TENANT, TOKEN] = ['01ARZ3NDEKTSV4RRFFQ69G5FAV', 'bench-migrations-token-0123456789'];
const [ROWS, DIM, FG_RPS] = [numArg('rows', 100_000), numArg('dim', 32), numArg('fg-rps', 100)];
const ci = process.argv.indexOf('--change');
const CHANGE = ci > 0 ? process.argv[ci + 1] : 'rename';
if (CHANGE !== 'rename' && CHANGE !== 'index') throw new Error('--change is rename or index');
const T = `/v1/tenants/${TENANT}`;
const TOML = `namespace = "bench"\ntable = "d"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "title"\nty = "str"\n[[columns]]\nname = "n"\nty = "i64"\n[[columns]]\nname = "emb"\nty = "vector"\ndim = ${DIM}\n[vector]\ncolumn = "emb"\ndim = ${DIM}\nmetric = "l2"\n[[fulltext]]\nfield = "title"\nanalyzer = "english"\n`;
const WORDS = 'shock wave boundary layer flow heat transfer pressure wing supersonic laminar turbulent jet nozzle plate cone body drag lift mach number'.split(' ');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const title = () => Array.from({ length: 10 }, () => WORDS[Math.floor(Math.random() * WORDS.length)]).join(' ');
const emb = () => Array.from({ length: DIM }, () => Math.round(Math.random() * 1000) / 1000);

/** A fixed-rate open-loop write load (PUT of a random row); every write's [start, latency, status]. */
function foreground(req) {
  const writes = [];
  let stop = false;
  const tick = async () => {
    const id = Math.floor(Math.random() * ROWS);
    const t0 = performance.now();
    const r = await req('PUT', `${T}/rows/bench.d/${id}`, { id, title: title(), n: id, emb: emb() }).catch(() => ({ status: 0 }));
    writes.push([t0, performance.now() - t0, r.status]);
  };
  const timer = setInterval(() => { if (!stop) void tick(); }, 1000 / FG_RPS);
  return { writes, stop: () => { stop = true; clearInterval(timer); } };
}

/** One server, one table, one migration; the cutover's figures. */
async function run(env) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-migrations-derived-'));
  const { proc, url } = await startBuiltServer(dir, { tenant: TENANT, token: TOKEN, env });
  const agent = new https.Agent({ keepAlive: true, rejectUnauthorized: false, maxSockets: 32 });
  const req = (m, p, b, ct) => httpsRequest(agent, url, TOKEN, m, p, b, ct);
  try {
    if ((await req('POST', `${T}/schemas`, TOML, 'text/plain')).status !== 200) throw new Error('schema');
    for (let k = 0; k < ROWS; k += 5000) {
      const lines = [];
      for (let i = k; i < Math.min(ROWS, k + 5000); i++) lines.push(JSON.stringify({ id: i, title: title(), n: i, emb: emb() }));
      const r = await req('POST', `${T}/rows/bench.d/_batch`, lines.join('\n') + '\n', 'application/x-ndjson');
      if (r.status !== 200) throw new Error(`ingest ${r.status} ${JSON.stringify(r.json)}`);
    }
    const fg = foreground(req);
    const m0 = performance.now();
    const operations = CHANGE === 'index' ? [{ op: 'add_index', name: 'by_n', columns: ['n'] }] : [{ op: 'rename_column', from: 'n', to: 'k' }];
    const sub = await req('POST', `${T}/migrations`, { schema: 'bench.d', operations, throttle: { max_rows_per_s: 1_000_000, batch_size: 500 } });
    if (sub.status !== 201) throw new Error(`submit ${sub.status} ${JSON.stringify(sub.json)}`);
    let m;
    for (;;) {
      m = (await req('GET', `${T}/migrations/${sub.json.id}`)).json;
      if (m.state === 'ReadyToCutover' || m.state === 'Failed') break;
      await sleep(100);
    }
    if (m.state === 'Failed') throw new Error(`migration failed: ${m.reason}`);
    const backfillS = (performance.now() - m0) / 1000;
    await sleep(500);
    const c0 = performance.now();
    const cut = await req('POST', `${T}/migrations/${sub.json.id}/cutover`);
    const c1 = performance.now();
    await sleep(500);
    fg.stop();
    await sleep(200);
    if (cut.status !== 200) throw new Error(`cutover ${cut.status} ${JSON.stringify(cut.json)}`);
    // The new shape answers: the vector metadata and the postings of a row written during the backfill.
    const top = await req('POST', `${T}/vector/bench.d/topk`, { vector: emb(), k: 1 });
    const col = CHANGE === 'index' ? 'n' : 'k';
    if (top.status !== 200 || top.json[0]?.metadata?.[col] === undefined) throw new Error(`topk after cutover ${top.status} ${JSON.stringify(top.json)}`);
    if (CHANGE === 'index') {
      const q = await req('POST', `${T}/sql`, { sql: 'SELECT id FROM "bench.d" WHERE n = 7' });
      if (q.status !== 200 || !JSON.stringify(q.json).includes('7')) throw new Error(`index query after cutover ${q.status} ${JSON.stringify(q.json)}`);
    }
    const stallWrites = fg.writes.filter(([s, l]) => s <= c1 && s + l >= c0);
    return {
      backfillS,
      cutoverMs: c1 - c0,
      fencedMs: cut.json.cutover?.fenced_ms,
      switched: cut.json.cutover?.switched === true,
      plan: m.plan,
      stall: Math.max(0, ...stallWrites.map(([, l]) => l)),
      refused: stallWrites.filter(([, , st]) => st === 503).length,
    };
  } finally {
    proc.kill('SIGTERM');
    agent.destroy();
    await new Promise((r) => proc.once('exit', r));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const index = CHANGE === 'index';
  const sw = await run(index ? { DB_MIGRATION_IN_PLACE: 'on' } : { DB_MIGRATION_CUTOVER: 'switch' });
  const rw = await run(index ? { DB_MIGRATION_IN_PLACE: 'off' } : { DB_MIGRATION_CUTOVER: 'rewrite' });
  const rows = [
    index ? ['add an index on n', 'in place', 'shadow copy', 'shadow / in place'] : ['', 'key switch', 'row rewrite (before)', 'rewrite / switch'],
    ['rows (full-text field + vector column)', ROWS, ROWS, ''],
    ['plan', sw.plan, rw.plan, ''],
    ['backfill s', sw.backfillS.toFixed(1), rw.backfillS.toFixed(1), (rw.backfillS / sw.backfillS).toFixed(2)],
    ['cutover request ms', sw.cutoverMs.toFixed(0), rw.cutoverMs.toFixed(0), (rw.cutoverMs / sw.cutoverMs).toFixed(1)],
    ['writes fenced ms (cutover.fenced_ms)', sw.fencedMs, rw.fencedMs, (rw.fencedMs / Math.max(1, sw.fencedMs)).toFixed(1)],
    [`cutover stall ms (longest write overlapping it, ${FG_RPS} writes/s)`, sw.stall.toFixed(0), rw.stall.toFixed(0), (rw.stall / Math.max(1, sw.stall)).toFixed(1)],
    ['writes answered 503 retry during the cutover', sw.refused, rw.refused, ''],
    ['cutover.switched', sw.switched, rw.switched, ''],
  ];
  const w = rows.map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
  for (const r of rows) console.log(r.map((c, i) => (i === 0 ? String(c).padEnd(w[i]) : String(c).padStart(w[i]))).join('  '));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
