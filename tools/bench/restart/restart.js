// Restart at scale (issue 25 §2): one tenant store with full-text documents, vectors and graph
// edges, loaded through TenantStore commits and closed (each participant's final checkpoint).
// Then a fresh `node` process opens it and answers its first search of each kind; the time of
// each answer is counted from that process's start (performance.now()). Run twice in the same
// invocation: from the checkpoints, and with the full-text checkpoint removed (the rebuild from
// every doc entry: what a restart cost before, and what a store written before checkpoints
// still costs once), so the table carries its peer and the ratio.
//
//   node --max-old-space-size=12000 tools/bench/restart/restart.js --docs 1000000 --vectors 100000 --edges 1000000
//   node tools/bench/restart/restart.js                      # smoke: 20,000 docs, 2,000 vectors, 20,000 edges
//   --data DIR   keep (or reuse) the loaded store there;  --no-rebuild   skip the rebuild run
//   --server     also start the built server (npm run build) over the same store as its tenant's, and
//                time /ready?require=read (503 until the store is open, then 200) and the first
//                search of each kind over HTTPS, from the server's spawn
//   --load-only  (with --data) load the store and stop: time the restarts later, on a quieter host
//   --cpu-prof DIR  the in-process child writes a CPU profile (.cpuprofile) into DIR
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');

const arg = (name, def) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : def;
};
const DIM = 128;

const MANIFESTS = [
  `namespace = "bench"\ntable = "docs"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "str"\nrequired = true\n[[columns]]\nname = "body"\nty = "str"\n[[fulltext]]\nfield = "body"\n`,
  `namespace = "bench"\ntable = "nodes"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "str"\nrequired = true\n`,
  `namespace = "bench"\ntable = "edges"\nprimary_key = ["src", "dst"]\n[[columns]]\nname = "src"\nty = "str"\nrequired = true\n[[columns]]\nname = "dst"\nty = "str"\nrequired = true\n[[relations]]\nname = "link"\nsource = "bench.nodes"\nsource_columns = ["src"]\ntarget = "bench.nodes"\ncolumns = ["dst"]\n`,
];

function participants() {
  const { FtsParticipant } = require('@mmdb/fts');
  const { VectorParticipant } = require('@mmdb/vector');
  const { GraphIndex } = require('@mmdb/graph');
  return { fts: new FtsParticipant(), vectors: new VectorParticipant(), graph: new GraphIndex() };
}

async function load(dir, docs, vectors, edges) {
  const { TenantStore } = require('@mmdb/storage');
  const { VectorParticipant } = require('@mmdb/vector');
  const { corpus } = require('../fts/zipf-corpus');
  const { rng } = require('../rng');
  const p = participants();
  const store = await TenantStore.open({ dir, participants: [p.fts, p.vectors, p.graph], sync: false, checkpointFrames: 0, checkpointMs: 0 });
  for (const m of MANIFESTS) await store.registerSchema(m);
  const t0 = Date.now();
  let changes = [];
  const flush = async (at) => {
    if (changes.length >= at) {
      await store.commit({ changes });
      changes = [];
    }
  };
  for (const d of corpus(docs)) {
    changes.push({ op: 'put', schema: 'bench.docs', row: d });
    await flush(5_000);
  }
  await flush(1);
  const tDocs = Date.now();
  const r = rng(7);
  for (let i = 0; i < vectors; i++) {
    changes.push(VectorParticipant.put('emb', { id: `v${i}`, embedding: Array.from({ length: DIM }, () => r() * 2 - 1), metric: 'l2' }));
    await flush(500);
  }
  await flush(1);
  const tVec = Date.now();
  const nodes = Math.max(10, Math.floor(edges / 10));
  for (let i = 0; i < edges; i++) {
    // skewed targets (a few hubs), ten edges a node on average; duplicates overwrite
    const src = `n${i % nodes}`;
    const dst = `n${Math.floor(nodes * r() * r())}`;
    changes.push({ op: 'put', schema: 'bench.edges', row: { src, dst } });
    await flush(2_000);
  }
  await flush(1);
  await p.graph.neighbors('bench.edges', 'link', 'n1'); // a served relation is built, so its image is checkpointed
  const tEdges = Date.now();
  await store.close();
  const out = { docs, vectors, edges, loadMs: { docs: tDocs - t0, vectors: tVec - tDocs, edges: tEdges - tVec, close: Date.now() - tEdges } };
  fs.writeFileSync(path.join(dir, 'bench-restart.json'), JSON.stringify(out));
  return out;
}

/** The child: open, then the first answer of each kind, times since this process started. */
async function child(dir) {
  const t = () => Math.round(performance.now());
  const { TenantStore } = require('@mmdb/storage');
  const { queries } = require('../fts/zipf-corpus');
  const p = participants();
  const modules = t(); // node's start and module loading
  const store = await TenantStore.open({ dir, participants: [p.fts, p.vectors, p.graph], sync: false, checkpointFrames: 0, checkpointMs: 0 });
  const opened = t();
  const cu = process.cpuUsage();
  const openCpu = Math.round((cu.user + cu.system) / 1000); // this process's CPU ms until the open (all threads): its wall time on an idle host, roughly
  const hits = await p.fts.search('bench.docs', 'body', queries(1)[0], 10);
  const fts = t();
  const q = Array.from({ length: DIM }, (_, i) => Math.sin(i));
  const near = p.vectors.tableNames().includes('emb') ? p.vectors.topk('emb', { vector: q, k: 10 }) : [];
  const vec = t();
  const nb = await p.graph.neighbors('bench.edges', 'link', 'n1');
  const graph = t();
  const out = {
    modules,
    phases: phasesOf(store.recovery.phases),
    opened,
    openCpu,
    fts,
    vectors: vec,
    graph,
    answers: [hits.length, near.length, nb.length],
    ftsFrom: p.fts.stats.openedFrom,
    ftsDecoded: p.fts.stats.entriesDecoded,
    ftsImageMB: +(p.fts.stats.imageBytes / 1e6).toFixed(1),
    vectorsFrom: p.vectors.stats.openedFrom,
    graphFrom: p.graph.stats.openedFrom,
    rssMB: Math.round(process.memoryUsage().rss / 1e6),
  };
  await store.close();
  process.stdout.write(`RESULT ${JSON.stringify(out)}\n`);
}

/** A store open's phases (RecoveryReport.phases) as {name: [start, end]}, ms since the process started. */
function phasesOf(phases) {
  return Object.fromEntries(phases.map((ph) => [ph.name, [Math.round(ph.start), Math.round(ph.end)]]));
}

function runChild(dir) {
  const prof = arg('cpu-prof'); // a directory: the child writes its CPU profile there
  const flags = prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [];
  const r = spawnSync(process.execPath, [...process.execArgv, ...flags, __filename, '--child', dir], { encoding: 'utf8', maxBuffer: 1 << 26 });
  const line = (r.stdout || '').split('\n').find((l) => l.startsWith('RESULT '));
  if (!line) throw new Error(`child failed (${r.status}): ${r.stderr}`);
  return JSON.parse(line.slice(7));
}

async function dropFtsCheckpoint(dir) {
  const { ClassicLevel } = require('classic-level');
  const { keyOf } = require('@mmdb/storage');
  const db = new ClassicLevel(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  await db.del(keyOf('F', [null, 'checkpoint']));
  await db.close();
}

const TENANT = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const TOKEN = 'bench-restart-token-0123456789';

/** A server's data directory whose bootstrap tenant's store is `storeDir`'s path: made once by a first start. */
async function serverDataDir(dataDir) {
  const { startBuiltServer } = require('../server');
  const { proc } = await startBuiltServer(dataDir, { tenant: TENANT, token: TOKEN, env: { DB_SYNC: 'false' } });
  proc.kill('SIGTERM');
  await new Promise((r) => proc.once('exit', r));
  return path.join(dataDir, 'tenants', TENANT, 'store');
}

/**
 * The built server started over the loaded store: from its spawn, the time it listens, every
 * /ready?require=read answer until the first 200 (polled every 20 ms, one connection), and the
 * first full-text, vector and graph answers (each request sent as soon as it listens: a request
 * for a tenant still opening waits for the open).
 */
async function serverRun(dataDir) {
  const https = require('https');
  const { startBuiltServer, httpsRequest } = require('../server');
  const { queries } = require('../fts/zipf-corpus');
  const t0 = performance.now();
  const ms = () => Math.round(performance.now() - t0);
  // info level: the server logs its boot steps ("Boot") and the tenant's open phases ("opened tenant")
  const { proc, url, output } = await startBuiltServer(dataDir, {
    tenant: TENANT,
    token: TOKEN,
    env: { DB_SYNC: 'false', NODE_OPTIONS: '--max-old-space-size=12000', DB_LOG_LEVEL: 'info', NO_COLOR: '1' },
  });
  const listening = ms();
  const ca = fs.readFileSync(path.join(dataDir, 'tls/cert.pem'), 'utf8');
  const probe = new https.Agent({ keepAlive: true, ca, maxSockets: 1 });
  const agent = new https.Agent({ keepAlive: true, ca, maxSockets: 8 });
  const T = `/v1/tenants/${TENANT}`;
  const first = (what, method, p, body) => httpsRequest(agent, url, TOKEN, method, p, body).then((r) => ({ what, status: r.status, n: Array.isArray(r.json) ? r.json.length : r.json, at: ms() }));
  const searches = Promise.all([
    first('fts', 'GET', `${T}/fts/bench.docs/body?q=${encodeURIComponent(queries(1)[0])}&limit=10`),
    first('vector', 'POST', `${T}/vector/emb/topk`, { vector: Array.from({ length: DIM }, (_, i) => Math.sin(i)), k: 10 }),
    first('graph', 'GET', `${T}/graph/bench.edges/neighbors?node=n1&rel=link`),
  ]);
  const ready = [];
  for (;;) {
    const r = await httpsRequest(probe, url, TOKEN, 'GET', '/ready?require=read');
    const bare = ready.length === 0 ? await httpsRequest(probe, url, TOKEN, 'GET', '/ready') : null;
    ready.push({ at: ms(), status: r.status, pressure: r.json?.pressure, loading: r.json?.loading_stores, bare: bare?.status });
    if (r.status === 200 || ms() > 600_000) break;
    await new Promise((res) => setTimeout(res, 20));
  }
  const answers = await searches;
  const boot = /modules loaded (\d+), app built (\d+), listening (\d+)/.exec(output());
  const opened = /opened tenant \S+ with engines .*; phases (\{.*\})/.exec(output());
  const phases = opened ? JSON.parse(opened[1]) : null;
  proc.kill('SIGTERM');
  await new Promise((r) => proc.once('exit', r));
  probe.destroy();
  agent.destroy();
  const not200 = ready.filter((r) => r.status !== 200);
  return {
    listening,
    boot: boot ? { modules: +boot[1], built: +boot[2], listening: +boot[3] } : null,
    phases,
    firstReady: ready[0],
    ready200At: ready[ready.length - 1].at,
    ready503: not200.length,
    other: not200.filter((r) => r.status !== 503).length,
    answers,
  };
}

/** The store in `dir`: reused when kept (`--data`) and loaded before, else loaded now (after `before`). */
async function loadOrReuse(dir, keep, before = async () => undefined) {
  const marker = path.join(dir, 'bench-restart.json');
  if (keep && fs.existsSync(marker)) return JSON.parse(fs.readFileSync(marker, 'utf8'));
  await before();
  return load(dir, Number(arg('docs', 20_000)), Number(arg('vectors', 2_000)), Number(arg('edges', 20_000)));
}

async function main() {
  if (process.argv.includes('--child')) return child(arg('child'));
  if (process.argv.includes('--server')) return mainServer();
  const keep = arg('data');
  const dir = keep ?? fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-restart-'));
  try {
    const info = await loadOrReuse(dir, keep);
    console.log(`store: ${info.docs.toLocaleString()} docs, ${info.vectors.toLocaleString()} vectors, ${info.edges.toLocaleString()} edges; load ms ${JSON.stringify(info.loadMs)}; load average ${os.loadavg()[0].toFixed(1)}`);
    const after = runChild(dir);
    let before = null;
    if (!process.argv.includes('--no-rebuild')) {
      await dropFtsCheckpoint(dir); // the child's close writes it again
      before = runChild(dir);
    }
    console.log(`\n### First answer after process start (ms since the process started; target ≤ 5,000)\n`);
    console.log('| first answer | size | from checkpoints | fts rebuilt from the keys (before) | ratio |');
    console.log('|---|---|---|---|---|');
    const row = (name, size, key) => {
      const b = before ? before[key] : null;
      console.log(`| ${name} | ${size.toLocaleString()} | ${after[key]} | ${b ?? '—'} | ${b ? (b / Math.max(1, after[key])).toFixed(1) + '×' : '—'} |`);
    };
    row('store open', info.docs, 'opened');
    row('full-text search (default ranking: plain BM25, top-10)', info.docs, 'fts');
    row('vector top-10 (l2)', info.vectors, 'vectors');
    row('graph neighbors (adjacency from its image)', info.edges, 'graph');
    printPhases(after, null);
    console.log('\nthe checkpoint run:', JSON.stringify(after));
    if (before) console.log('the rebuild run:', JSON.stringify(before));
  } finally {
    if (!keep) fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Where the time from a process's start to its first answers went: each step's start → end in
 * ms since that process started (the store's steps: RecoveryReport.phases; the server's: its
 * "Boot" and "opened tenant" log lines). The participants' loads overlap.
 */
function printPhases(inProcess, srv) {
  console.log(`\n### The open, step by step (ms since the process started: start → end)\n`);
  const rows = [];
  const row = (step, child, server) => rows.push(srv ? `| ${step} | ${child} | ${server} |` : `| ${step} | ${child} |`);
  const span = (p) => (p ? `${p[0]} → ${p[1]} (${p[1] - p[0]})` : '—');
  const b = srv?.boot;
  row('node start, module loading', `0 → ${inProcess.modules}`, b ? `0 → ${b.modules}` : '—');
  row('Nest app built (system store, modules)', '—', b ? span([b.modules, b.built]) : '—');
  row('listening', '—', b ? b.listening : srv?.listening);
  const tenant = Object.fromEntries((srv?.phases?.tenant ?? []).map(([n, s, e]) => [n, [s, e]]));
  const store = Object.fromEntries((srv?.phases?.store ?? []).map(([n, s, e]) => [n, [s, e]]));
  row('tenant: engines created', '—', span(tenant.engines));
  for (const n of new Set([...Object.keys(inProcess.phases), ...Object.keys(store)])) row(`store: ${n}`, span(inProcess.phases[n]), span(store[n]));
  for (const n of ['token migration', 'attach', 'opened hooks']) row(`tenant: ${n}`, '—', span(tenant[n]));
  const cpu = srv?.phases?.cpuMs;
  row('store open', `${inProcess.opened} (CPU until then: ${inProcess.openCpu} ms)`, `/ready?require=read 200 at ${srv?.ready200At}${cpu ? ` (CPU until the tenant was open: ${cpu} ms)` : ''}`);
  const at = (w) => srv?.answers.find((a) => a.what === w)?.at ?? '—';
  for (const [w, k, c] of [['full-text', 'fts', 'fts'], ['vector', 'vector', 'vectors'], ['graph', 'graph', 'graph']]) row(`first ${w} answer`, inProcess[c], at(k));
  console.log(srv ? '| step | in-process open (child) | built server |\n|---|---|---|' : '| step | in-process open (child) |\n|---|---|');
  // without a server, its rows (Nest, listening, tenant steps) are left out
  for (const r of rows) if (srv || !/^\| (Nest|listening|tenant:)/.test(r)) console.log(r);
}

/** --server: the store is loaded as the bootstrap tenant's, then the server is started over it. */
async function mainServer() {
  const keep = arg('data');
  const dataDir = keep ?? fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-restart-srv-'));
  try {
    const storeDir = path.join(dataDir, 'tenants', TENANT, 'store');
    const info = await loadOrReuse(storeDir, keep, () => serverDataDir(dataDir));
    if (process.argv.includes('--load-only')) return console.log(`loaded into ${dataDir}: ${JSON.stringify(info)}`);
    console.log(`store: ${info.docs.toLocaleString()} docs, ${info.vectors.toLocaleString()} vectors, ${info.edges.toLocaleString()} edges; load ms ${JSON.stringify(info.loadMs)}; load average ${os.loadavg()[0].toFixed(1)}`);
    const inProcess = runChild(storeDir);
    const srv = await serverRun(dataDir);
    console.log(`\n### From a process's start (ms; target: each first search ≤ 5,000)\n`);
    console.log('| what | in-process open (child) | built server over HTTPS |');
    console.log('|---|---|---|');
    console.log(`| listening | — | ${srv.listening} |`);
    console.log(`| store open | ${inProcess.opened} | /ready?require=read first 200 at ${srv.ready200At} |`);
    const at = (w) => srv.answers.find((a) => a.what === w);
    for (const [w, k] of [['fts', 'fts'], ['vector', 'vectors'], ['graph', 'graph']]) console.log(`| first ${w} answer | ${inProcess[k]} | ${at(w).at} (HTTP ${at(w).status}, ${at(w).n} hits) |`);
    console.log(`\n/ready?require=read: first answer ${JSON.stringify(srv.firstReady)} (bare /ready: ${srv.firstReady.bare}); ${srv.ready503} answers of 503 before the first 200, ${srv.other} of another status`);
    printPhases(inProcess, srv);
    console.log('\nthe in-process run:', JSON.stringify(inProcess));
    console.log('the server run:', JSON.stringify(srv));
  } finally {
    if (!keep) fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
