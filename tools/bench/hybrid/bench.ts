/**
 * Hybrid (multi-model) benchmark, README.md. Over HTTPS against the built server:
 *  1. filtered vector top-10 through SQL at 10% and 1% selectivity (and SEL_EXTRA, e.g. 0.3),
 *     recall@10 against exact ground truth and rows returned, beside PGlite + pgvector (HNSW,
 *     same data and filter, in process);
 *  2. BM25 + vector RRF top-10 in one SQL statement, beside the same answer assembled by a
 *     client from the vector and fts routes (parallel keep-alive calls); plain BM25 on both sides;
 *  3. a two-hop graph expansion joined to rows with a filter, in one statement, beside the client
 *     assembly from the bfs route and row GETs.
 * Env: ROWS (100000), DIM (128), Q (queries per measurement, 200), PEER (1: PGlite), SEL_EXTRA,
 * STREAMS (2: parallel NDJSON load requests), CHUNK (2000 rows per commit), SETTLE_S (pause after
 * the load: max(5, ROWS / 20000) s), SERVER_HEAP_MB (server heap; 12000 above 200,000 rows),
 * QUERY_TIMEOUT_MS (the server's query budget: 600000, for the first reads of a 1M-row table),
 * SERVER_SEMI_MB (the server's young-generation semi-space: 64 MB, README "Where the RRF tail goes"),
 * WARM (20: unmeasured statements before each loop, ours and the client's alike), QP99 (max(Q, 1000):
 * samples of the RRF and 2-hop lines, judged by their p99), CALIB_WAIT_S (1800: the
 * longest wait for a running HNSW ef calibration to end before the loops).
 * Rows are loaded by streamed NDJSON `_batch` requests (the corpus is generated as it is sent).
 */
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { hostSteal } from '../vector/https';
import { exactRrf, HOP_SQL, makeCorpus, manifest, pct, queries, recall, recallWithTies, RRF_SQL, truth, vectorOf, QUERY_WORDS, type Corpus } from './data';
import { latencyBuckets, metricsText, TENANT, TOKEN } from './http';
import { paired, type Loop, type Watch } from './paired';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startBuiltServer } = require('../server.js');

const ROWS = Number(process.env.ROWS ?? 100_000);
const DIM = Number(process.env.DIM ?? 128);
const Q = Number(process.env.Q ?? 200);
const PEER = process.env.PEER !== '0';
const WARM = Number(process.env.WARM ?? 20);
/** Samples of the lines judged by their p99 against the client (RRF, 2-hop): with 200 the p99 is the 2nd-worst request. */
const QP99 = Number(process.env.QP99 ?? Math.max(Q, 1000));
/** Interleaved repeats of the RRF and 2-hop loops (paired.ts): each prints its own ratio; the table pools them. */
const REPS = Math.max(1, Number(process.env.REPS ?? 3));

interface Client { req(method: string, p: string, body?: unknown, raw?: string): Promise<any> }

function client(url: string, ca: string): Client {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 8, ca });
  return {
    req: (method, p, body, raw) => new Promise((resolve, reject) => {
      const data = raw ?? (body === undefined ? undefined : JSON.stringify(body));
      const r = https.request(`${url}/v1/tenants/${TENANT}${p}`, {
        method, agent,
        headers: { authorization: `Bearer ${TOKEN}`, ...(data ? { 'content-type': raw ? 'text/plain' : 'application/json', 'content-length': Buffer.byteLength(data) } : {}) },
      }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200) reject(new Error(`${method} ${p}: ${res.statusCode} ${text.slice(0, 300)}`));
          else resolve(text ? JSON.parse(text) : null);
        });
      });
      r.on('error', reject);
      r.end(data);
    }),
  };
}

/** Streams `lines` as NDJSON into `_batch` over `streams` parallel requests (each takes the next line when it can write). */
async function load(url: string, ca: string, lines: Generator<string>, streams: number, chunk: number): Promise<number> {
  let sent = 0;
  const one = () => new Promise<void>((resolve, reject) => {
    const req = https.request(`${url}/v1/tenants/${TENANT}/rows/bench.items/_batch?chunk=${chunk}`, {
      method: 'POST', ca, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/x-ndjson' },
    }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d) => parts.push(d));
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`_batch: ${res.statusCode} ${Buffer.concat(parts).toString('utf8').slice(0, 300)}`))));
    });
    req.on('error', reject);
    const pump = () => {
      for (;;) {
        let buf = '';
        for (let k = 0; k < 200; k++) {
          const x = lines.next();
          if (x.done) break;
          buf += `${x.value}\n`;
          sent++;
        }
        if (buf === '') return void req.end();
        if (!req.write(buf)) return void req.once('drain', pump);
      }
    };
    pump();
  });
  await Promise.all(Array.from({ length: streams }, one));
  return sent;
}

/** The server's GC so far by kind (prom-client's `nodejs_gc_duration_seconds` on the public /metrics): count and seconds. */
async function gcSoFar(url: string, ca: string): Promise<Map<string, { n: number; s: number }>> {
  const text = await metricsText(url, ca);
  const out = new Map<string, { n: number; s: number }>();
  for (const m of text.matchAll(/^db_process_nodejs_gc_duration_seconds_(count|sum)\{kind="(\w+)"\} (\S+)$/gm)) {
    const e = out.get(m[2]) ?? { n: 0, s: 0 };
    if (m[1] === 'count') e.n = Number(m[3]); else e.s = Number(m[3]);
    out.set(m[2], e);
  }
  return out;
}

/** What the server's GC did between two `gcSoFar` readings: `minor 6 (9.1 ms), major 1 (12.0 ms)`. */
function gcDelta(a: Map<string, { n: number; s: number }>, b: Map<string, { n: number; s: number }>): string {
  const parts: string[] = [];
  for (const [kind, e] of b) {
    const n = e.n - (a.get(kind)?.n ?? 0);
    if (n > 0) parts.push(`${kind} ${n} (${((e.s - (a.get(kind)?.s ?? 0)) * 1000).toFixed(1)} ms)`);
  }
  return parts.join(', ') || 'none';
}

/** This process's (the client's) GCs from now until the call of what it returns: `3 (4.1 ms)`. */
function clientGc(): () => string {
  const seen: number[] = [];
  const obs = new PerformanceObserver((l) => l.getEntries().forEach((e) => seen.push(e.duration)));
  obs.observe({ entryTypes: ['gc'] });
  return () => {
    obs.disconnect();
    return `${seen.length} (${seen.reduce((a, b) => a + b, 0).toFixed(1)} ms)`;
  };
}

/** How many of the server's `db_query_latency_ms{surface}` observations so far were over `le` ms (a bucket: 2, 5, 10 …), and in all. */
async function slowSoFar(url: string, ca: string, surface: string, le = '2'): Promise<{ over2: number; all: number }> {
  const b = await latencyBuckets(url, ca, surface);
  const all = b.get('+Inf') ?? 0;
  return { over2: all - (b.get(le) ?? 0), all };
}

/** The engine's slow observations between two readings per surface: `sql 3 of 1020`. */
const slowDelta = (a: Array<{ over2: number; all: number }>, b: Array<{ over2: number; all: number }>, names: string[]) =>
  names.map((n, i) => `${n} ${b[i].over2 - a[i].over2} of ${b[i].all - a[i].all}`).join(', ');

async function timed<T>(n: number, fn: (i: number) => Promise<T>): Promise<Loop<T>> {
  const ms: number[] = [];
  const out: T[] = [];
  // warm-up, the same for every side: a line's first statements run code paths the JIT has not optimized yet
  for (let i = 0; i < Math.min(WARM, n); i++) await fn(i);
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    out.push(await fn(i));
    ms.push(performance.now() - t0);
  }
  return { ms, out };
}

const fmt = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '-');
const table: string[][] = [['measure', 'ours p50 ms', 'ours p99 ms', 'ours recall / rows', 'peer', 'peer p50 ms', 'peer p99 ms', 'peer recall / rows', 'p99 ratio', 'per-repeat p99 ratios']];
const row = (m: string, a: { ms: number[] }, extra: string, peer: string, b: { ms: number[] } | null, pextra: string, reps = '-') =>
  table.push([m, fmt(pct(a.ms, 50)), fmt(pct(a.ms, 99)), extra, peer, b ? fmt(pct(b.ms, 50)) : '-', b ? fmt(pct(b.ms, 99)) : '-', pextra, b ? (pct(a.ms, 99) / pct(b.ms, 99)).toFixed(2) : '-', reps]);

/** A loop's watch (paired.ts): the server's GCs, this client's GCs, the engine's observations of `surfaces` over `le` ms, the host's CPU steal. */
const watchOf = (url: string, ca: string, surfaces: string[], le: string): Watch => ({
  async start() {
    const gcA = await gcSoFar(url, ca);
    const slA = await Promise.all(surfaces.map((x) => slowSoFar(url, ca, x, le)));
    const steal = hostSteal();
    const cg = clientGc();
    return async () => {
      const cgDone = cg();
      const stolen = steal();
      const slB = await Promise.all(surfaces.map((x) => slowSoFar(url, ca, x, le)));
      const gcB = await gcSoFar(url, ca);
      return `server GC ${gcDelta(gcA, gcB)}, this client's GC ${cgDone}, over ${le} ms in the engine ${slowDelta(slA, slB, surfaces)}, steal ${stolen.toFixed(1)} %`;
    };
  },
});

async function pglite(c: Corpus): Promise<any> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { PGlite } = require('@electric-sql/pglite');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { vector } = require('@electric-sql/pglite/vector');
  const pg = new PGlite({ extensions: { vector } });
  await pg.exec(`CREATE EXTENSION IF NOT EXISTS vector; CREATE TABLE items(id text primary key, cat int, emb vector(${DIM}));`);
  for (let i = 0; i < c.n; i += 500) {
    const ids = Array.from({ length: Math.min(500, c.n - i) }, (_, k) => i + k);
    await pg.exec(`INSERT INTO items VALUES ${ids.map((j) => `('r${j}', ${c.cat[j]}, '[${vectorOf(c, j).join(',')}]')`).join(',')}`);
  }
  await pg.exec('CREATE INDEX ON items USING hnsw (emb vector_l2_ops); CREATE INDEX ON items(cat); ANALYZE items;');
  return pg;
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-hybrid-bench-'));
  // the server keeps the whole table decoded in its table cache (the filtered top-k and the joins read it) and a heap to hold it at 1M rows
  // a 64 MB young generation: 4× fewer scavenges per request than the default 16 MB (README)
  // the query budget is raised for the warm-up: the first read of a 1M-row table (count(*), the first
  // filter evaluation) decodes every row, which ran past the default 30 s on a loaded shared host
  // (and its byte budget: half that heap; a 1M-row table with 128-dim vectors as text is ~3 GB estimated)
  const heapMb = Number(process.env.SERVER_HEAP_MB ?? (ROWS > 200_000 ? 12_000 : 4_000));
  const env = {
    DB_SYNC: 'false', DB_QUERY_TIMEOUT_MS: process.env.QUERY_TIMEOUT_MS ?? '600000', SQL_TABLE_CACHE_ROWS: String(Math.max(1_000_000, ROWS)),
    DB_TABLE_CACHE_BYTES: String(Math.floor((heapMb / 2) * 1048576)), NODE_OPTIONS: `--max-old-space-size=${heapMb} --max-semi-space-size=${process.env.SERVER_SEMI_MB ?? 64}`,
  };
  const { proc, url } = await startBuiltServer(dir, { tenant: TENANT, token: TOKEN, env });
  try {
    const ca = fs.readFileSync(path.join(dir, 'tls', 'cert.pem'), 'utf8');
    let c = client(url, ca);
    const { corpus, lines } = makeCorpus(ROWS, DIM);
    await c.req('POST', '/schemas', undefined, manifest(DIM));
    const tLoad = performance.now();
    const sent = await load(url, ca, lines, Number(process.env.STREAMS ?? 2), Number(process.env.CHUNK ?? 2000));
    const loadS = (performance.now() - tLoad) / 1000;
    console.log(`loaded ${sent} rows × ${DIM}-d in ${loadS.toFixed(1)} s (${Math.round(sent / loadS)} rows/s, NDJSON _batch)`);
    // let the load's background work end (the vector index checkpoint, the table cache's first read) before measuring
    const settle = Number(process.env.SETTLE_S ?? Math.max(5, Math.round(ROWS / 20_000)));
    await c.req('POST', '/sql', { sql: 'SELECT count(*) AS n FROM bench.items' });
    // the relation's adjacency is built by the first graph read (at 100k rows ~200k edges decoded
    // into a CSR, tens of MB of garbage): build it here, before the settle, so its GC debt (a
    // major collection of the grown heap) is not paid inside the first graph loop measured
    await c.req('GET', '/graph/bench.items/bfs?rel=links&src=r0&depth=1');
    await new Promise((r) => setTimeout(r, settle * 1000));
    const qs = queries(corpus, Q);
    // the HNSW ef calibration of the last growth step may still run (at 1M it measures ~1M vectors
    // against 64 queries in 2 ms slices on the event loop, and changes the ef when it ends): the
    // loops start once explain no longer says "calibrating" (up to CALIB_WAIT_S, 1800)
    const tCal = performance.now();
    for (;;) {
      const ex = await c.req('POST', '/sql?explain=true', { sql: 'SELECT id FROM bench.items ORDER BY emb <-> $1 LIMIT 10', params: [qs[0]] });
      if (!JSON.stringify(ex.explain?.tree ?? '').includes('calibrating')) break;
      if (performance.now() - tCal > Number(process.env.CALIB_WAIT_S ?? 1800) * 1000) {
        console.log('the ef calibration still runs: measuring anyway');
        break;
      }
      await new Promise((r) => setTimeout(r, 2000));
    }
    console.log(`waited ${((performance.now() - tCal) / 1000).toFixed(1)} s for the ef calibration to end`);
    // the peer loads after ours (the corpus's vectors are generated as its rows are streamed);
    // its minutes of index building leave the client's keep-alive sockets idle past the server's
    // keep-alive timeout, so the client starts afresh after it (else an EPIPE on the next request)
    const tPeer = performance.now();
    const pg = PEER ? await pglite(corpus) : null;
    if (pg) console.log(`PGlite loaded and indexed in ${((performance.now() - tPeer) / 1000).toFixed(1)} s`);
    c = client(url, ca);
    const sels = [0.1, 0.01, ...(process.env.SEL_EXTRA ? [Number(process.env.SEL_EXTRA)] : [])];

    // 1. filtered vector top-10 through SQL
    for (const sel of sels) {
      const below = Math.round(sel * 1000);
      const want = qs.map((q) => truth(corpus, q, below));
      const sql = 'SELECT id FROM bench.items WHERE cat < $2 ORDER BY emb <-> $1 LIMIT 10';
      const ours = await timed(Q, (i) => c.req('POST', '/sql', { sql, params: [qs[i], below] }).then((r) => r.rows.map((x: { id: string }) => x.id) as string[]));
      const rec = ours.out.reduce((a, got, i) => a + recall(got, want[i]), 0) / Q;
      const n = ours.out.reduce((a, got) => a + got.length, 0) / Q;
      let peer: { ms: number[]; out: string[][] } | null = null;
      if (pg) {
        peer = await timed(Q, async (i) => (await pg.query(`SELECT id FROM items WHERE cat < $2 ORDER BY emb <-> $1 LIMIT 10`, [`[${qs[i].join(',')}]`, below])).rows.map((x: { id: string }) => x.id));
      }
      const prec = peer ? peer.out.reduce((a, got, i) => a + recall(got, want[i]), 0) / Q : NaN;
      const pn = peer ? peer.out.reduce((a, got) => a + got.length, 0) / Q : NaN;
      row(`filtered top-10 at ${sel * 100}% (SQL)`, ours, `${rec.toFixed(3)} / ${n.toFixed(1)}`, 'PGlite+pgvector HNSW (in process)', peer, pg ? `${prec.toFixed(3)} / ${pn.toFixed(1)}` : '-');
      const ex = await c.req('POST', '/sql?explain=true', { sql, params: [qs[0], below] });
      console.log(`explain ${sel * 100}%: ${JSON.stringify(ex.explain?.tree ?? ex).match(/vector_topk[^}]*/)?.[0] ?? '?'}`);
    }

    // 2. BM25 + vector RRF top-10
    const words = QUERY_WORDS;
    // The answer is the fused top-10 documents themselves (what a search page shows), so the
    // client assembly also fetches the 10 rows the fused ids name, as part 3 does.
    const rrfSql = RRF_SQL;
    // what each side's tail is made of, per repeat: the server's GCs during its loop (README "Where
    // the RRF tail goes"), the bench client's own GCs, how many statements / route calls the engine
    // itself took over 5 ms for (the rest of a slow sample is outside the plans), the host's steal
    const surfaces = ['sql', 'vector', 'fts'];
    const client2v: string[][] = [];
    const rrf = await paired({
      label: 'RRF', reps: REPS, n: QP99, timed, watch: watchOf(url, ca, surfaces, '5'),
      // each sample keeps only its ids: the bench client's heap holds no answers across the loops,
      // so its own young-generation collections stay short (they copy what survives) on both sides
      ours: (i) => c.req('POST', '/sql', { sql: rrfSql, params: [qs[i % Q], words[i % words.length]] }).then((r) => r.rows.map((x: { id: string }) => x.id) as string[]),
      client: async (i) => {
        const [v, f] = await Promise.all([
          c.req('POST', '/vector/bench.items/topk', { vector: qs[i % Q], k: 20 }),
          // the same ranking as the statement's 'bm25': plain BM25, no RM3 feedback, no proximity
          c.req('GET', `/fts/bench.items/body?q=${encodeURIComponent(words[i % words.length])}&limit=20&feedback=none&proximity=none`),
        ]);
        const s = new Map<string, number>();
        v.forEach((m: { id: string }, r: number) => s.set(m.id, (s.get(m.id) ?? 0) + 1 / (61 + r)));
        f.forEach((d: { doc_id: string }, r: number) => s.set(d.doc_id, (s.get(d.doc_id) ?? 0) + 1 / (61 + r)));
        const top = [...s].sort((a, b) => b[1] - a[1]).slice(0, 10);
        client2v[i] = v.map((m: { id: string }) => m.id); // for the route's recall@20, after the loops
        return (await Promise.all(top.map(([id]) => c.req('GET', `/rows/bench.items/${id}`)))).map((x: { id: string }) => x.id) as string[];
      },
    });
    const ours2 = rrf.ours;
    const client2 = rrf.client;
    const N2 = ours2.out.length;
    const ex2 = await c.req('POST', '/sql?explain=true', { sql: rrfSql, params: [qs[0], words[0]] });
    const flat = (n: { op?: string; detail?: string; time_ms?: number; children?: unknown[] }, d = 0): string[] => [`${'  '.repeat(d)}${n.op} ${n.time_ms ?? '?'} ms ${n.detail ?? ''}`, ...((n.children ?? []) as (typeof n)[]).flatMap((x) => flat(x, d + 1))];
    if (process.env.EXPLAIN) console.log(`explain RRF:\n${flat(ex2.explain?.tree ?? {}).join('\n')}`);
    // recall of each side's fused top-10 against the exact fusion: RRF over the exact 20 nearest
    // (brute force) and the BM25 top-20 (the fts route's plain BM25, exact); and the vector leg's
    // own recall@20 (the statement's `ORDER BY emb <-> $1 LIMIT 20` alone, untimed; the route's from the loop)
    const tR = performance.now();
    const vTruth = qs.map((q) => truth(corpus, q, Infinity, 20));
    const fTruth = await Promise.all(words.map((w) => c.req('GET', `/fts/bench.items/body?q=${encodeURIComponent(w)}&limit=20&feedback=none&proximity=none`).then((f) => f.map((d: { doc_id: string }) => d.doc_id) as string[])));
    const fused = (i: number) => exactRrf(vTruth[i % Q], fTruth[i % words.length]);
    const fusedRecall = (ids: (i: number) => string[]) => Array.from({ length: N2 }, (_, i) => recallWithTies(ids(i), fused(i).want, fused(i).accept)).reduce((a, b) => a + b, 0) / N2;
    const oursFused = fusedRecall((i) => ours2.out[i]);
    const clientFused = fusedRecall((i) => client2.out[i]);
    const vecSql = 'SELECT id FROM bench.items ORDER BY emb <-> $1 LIMIT 20';
    let oursVec = 0;
    for (let i = 0; i < Q; i++) oursVec += recall((await c.req('POST', '/sql', { sql: vecSql, params: [qs[i]] })).rows.map((r: { id: string }) => r.id), vTruth[i]);
    const routeVec = client2v.slice(0, Q);
    const clientVec = routeVec.reduce((a, ids, i) => a + recall(ids, vTruth[i]), 0) / Math.max(1, routeVec.length);
    console.log(`RRF recall (${((performance.now() - tR) / 1000).toFixed(1)} s to measure): fused top-10 vs exact fusion ours ${oursFused.toFixed(3)}, client ${clientFused.toFixed(3)}; vector recall@20 ours ${(oursVec / Q).toFixed(3)}, route ${clientVec.toFixed(3)}`);
    row('BM25 + vector RRF top-10 rows', ours2, `fused ${oursFused.toFixed(3)} / ${(ours2.out.reduce((a, r) => a + r.length, 0) / N2).toFixed(1)}`, 'client assembly (2 routes + row GETs, parallel)', client2, `fused ${clientFused.toFixed(3)} / ${(client2.out.reduce((a, r) => a + r.length, 0) / N2).toFixed(1)}`, rrf.cell);

    // 3. two-hop expansion joined to rows with a filter
    const g3 = HOP_SQL;
    // what the 2-hop tail is made of, per repeat: the server's GCs, the client's own GCs, and how
    // many statements the engine itself took over 2 ms for (`db_query_latency_ms{surface="sql"}`:
    // the rest of a slow sample is outside the plan — the HTTPS request, a pause, the host)
    const hop = await paired({
      label: '2-hop', reps: REPS, n: QP99, timed, watch: watchOf(url, ca, ['sql'], '2'),
      ours: (i) => c.req('POST', '/sql', { sql: g3, params: [`r${(i * 7919) % ROWS}`] }).then((r) => r.rows.length as number),
      client: async (i) => {
        const b = await c.req('GET', `/graph/bench.items/bfs?rel=links&src=r${(i * 7919) % ROWS}&depth=2`);
        const rows = await Promise.all(b.slice(1).map((v: { node: string }) => c.req('GET', `/rows/bench.items/${v.node}`)));
        return rows.filter((r: { cat: number }) => r.cat < 500).length;
      },
    });
    const ours3 = hop.ours;
    const client3 = hop.client;
    const differ = ours3.out.filter((n, i) => n !== client3.out[i]).length;
    console.log(`2-hop answers: ${differ} of ${ours3.out.length} samples differ in row count between the statement and the client assembly`);
    row('2-hop expansion ⋈ rows, filtered', ours3, '-', 'client assembly (bfs + row GETs)', client3, '-', hop.cell);

    console.log(`\nhybrid benchmark: ${ROWS} rows, ${DIM}-d, ${Q} queries per filtered line and ${REPS} × ${QP99} per RRF and 2-hop line (interleaved repeats, pooled), over HTTPS (one keep-alive client)`);
    const w = table[0].map((_, j) => Math.max(...table.map((r) => r[j].length)));
    for (const r of table) console.log(r.map((x, j) => x.padEnd(w[j])).join('  '));
    await pg?.close();
  } finally {
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
