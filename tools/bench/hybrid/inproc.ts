/**
 * The hybrid statements in process (README "The RRF statement in process"): no HTTPS, no server.
 * Loads ROWS rows of the bench's corpus into a real TenantStore (classic-level on disk) with the
 * fts, vector and graph participants, then runs Q statements of each kind through `SqlEngine.run`
 * (and the routes' functions, the client assembly's leaves), printing p50 / p90 / p99 / max and
 * this process's GCs per kind; EXPLAIN=1 prints the RRF statement's explain tree (per-node times,
 * the leaves' strategies); PROF=1 profiles each kind's loop (V8's sampling profiler, 100 µs) and
 * prints the functions with the most self and total time. EFS=32,64,128 runs the RRF statement's 200
 * queries with the HNSW walk held at each ef in turn and prints, per ef, the fused top-10's recall
 * against the exact fusion (RRF over the brute-force 20 nearest and the fts route's BM25 top-20),
 * the vector leg's recall@20 and the statement's p50: what a fusion input's ef costs in recall.
 * HEAP=1 (without PROF) samples each kind's allocation (collected objects included) and prints the
 * sites allocating most per statement, each with its two callers: the garbage a statement makes.
 * Env: ROWS (20000), Q (1000), ONLY (comma list of rrf,vec20,vroute,froute,get,hop), PROF, HEAP, EXPLAIN, TOP (25), EFS.
 * Not a benchmark of record: it says where a statement's engine time goes, apart from the request.
 */
import * as fs from 'node:fs';
import { Session } from 'node:inspector';
import * as os from 'node:os';
import * as path from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { TenantStore, type Change } from '@mmdb/storage';
import { FtsParticipant } from '@mmdb/fts';
import { VectorParticipant } from '@mmdb/vector';
import { GraphIndex } from '@mmdb/graph';
import { SqlEngine, ftsSearchRoute, vectorTopkRoute } from '@mmdb/sql';
import { exactRrf, HOP_SQL, makeCorpus, manifest, pct, queries, recall, recallWithTies, RRF_SQL, QUERY_WORDS, truth } from './data';

const ROWS = Number(process.env.ROWS ?? 20_000);
const Q = Number(process.env.Q ?? 1000);
const TOP = Number(process.env.TOP ?? 25);

interface Profile { nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }>; samples: number[]; timeDeltas: number[] }

/** The functions with the most self and total (inclusive) time in a CPU profile, as lines. */
function summary(p: Profile): string[] {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const name = (id: number) => {
    const f = byId.get(id)!.callFrame;
    return `${f.functionName || '(anon)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`;
  };
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let all = 0;
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0;
    all += dt;
    self.set(name(id), (self.get(name(id)) ?? 0) + dt);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const nm = name(cur);
      if (!seen.has(nm)) total.set(nm, (total.get(nm) ?? 0) + dt);
      seen.add(nm);
    }
  });
  const top = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, TOP).map(([n, t]) => `  ${((100 * t) / all).toFixed(1).padStart(5)} %  ${n}`);
  return [`profile: ${(all / 1000).toFixed(0)} ms sampled; self:`, ...top(self), 'total:', ...top(total)];
}

interface HeapNode { callFrame: { functionName: string; url: string; lineNumber: number }; selfSize: number; children: HeapNode[] }

/** HEAP=1: the sites allocating most per statement (V8's sampling heap profiler, collected objects included), each with its two callers. */
function heapSites(head: HeapNode, stmts: number): string[] {
  const name = (x: HeapNode) => `${x.callFrame.functionName || '(anon)'} ${x.callFrame.url.split('/').slice(-2).join('/')}:${x.callFrame.lineNumber + 1}`;
  const self = new Map<string, number>();
  let total = 0;
  const walk = (x: HeapNode, up: string[]) => {
    const k = [name(x), ...up.slice(0, 2)].join(' < ');
    self.set(k, (self.get(k) ?? 0) + x.selfSize);
    total += x.selfSize;
    for (const c of x.children) walk(c, [name(x), ...up]);
  };
  walk(head, []);
  return [`allocated (sampled) ${(total / 1024 / stmts).toFixed(1)} KB per statement; sites:`, ...[...self].sort((a, b) => b[1] - a[1]).slice(0, TOP).map(([k, v]) => `  ${(v / 1024 / stmts).toFixed(2).padStart(6)} KB  ${k}`)];
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-hybrid-inproc-'));
  const fts = new FtsParticipant();
  const vector = new VectorParticipant();
  const graph = new GraphIndex();
  const store = await TenantStore.open({ dir, sync: false, participants: [fts, vector, graph] });
  try {
    graph.attach(store);
    const sql = new SqlEngine(store, undefined, { sources: { fts, vector, graph } });
    await store.registerSchema(manifest(128));
    const { corpus, lines } = makeCorpus(ROWS, 128);
    const t0 = performance.now();
    // commits of 500 rows, a few in flight (group commit), as the NDJSON load does
    const inflight: Promise<unknown>[] = [];
    let batch: Change[] = [];
    for (const l of lines) {
      batch.push({ op: 'put', schema: 'bench.items', row: JSON.parse(l) });
      if (batch.length < 500) continue;
      inflight.push(store.commit({ changes: batch }));
      batch = [];
      if (inflight.length > 4) await inflight.shift();
    }
    if (batch.length) inflight.push(store.commit({ changes: batch }));
    await Promise.all(inflight);
    console.log(`loaded ${ROWS} rows in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    await sql.run('SELECT count(*) FROM bench.items'); // the table cache's first read
    const qs = queries(corpus, 200);
    const words = QUERY_WORDS;
    // the HNSW ef calibration of the last growth step runs in the background: measure after it
    for (let i = 0; ; i++) {
      const ex = await sql.run('SELECT id FROM bench.items ORDER BY emb <-> $1 LIMIT 10', { params: [qs[0]], explain: true });
      if (!JSON.stringify(ex).includes('calibrating') || i > 1800) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    const gcs: number[] = [];
    const obs = new PerformanceObserver((l) => l.getEntries().forEach((e) => gcs.push(e.duration)));
    obs.observe({ entryTypes: ['gc'] });
    const kinds: Record<string, (i: number) => Promise<unknown>> = {
      rrf: (i) => sql.run(RRF_SQL, { params: [qs[i % 200], words[i % words.length]] }),
      // the statement's vector leg alone, and the two routes the client assembly calls
      vec20: (i) => sql.run('SELECT id FROM bench.items ORDER BY emb <-> $1 LIMIT 20', { params: [qs[i % 200]] }),
      vroute: (i) => vectorTopkRoute(sql, 'bench.items', { vector: qs[i % 200], k: 20 }),
      froute: (i) => ftsSearchRoute(sql, 'bench.items', 'body', words[i % words.length], 20, { feedback: 'none', proximity: 'none' }),
      get: (i) => sql.run('SELECT * FROM bench.items WHERE id = $1', { params: [`r${(i * 7919) % ROWS}`] }),
      // the 2-hop expansion joined to rows with a filter (the bench's part 3)
      hop: (i) => sql.run(HOP_SQL, { params: [`r${(i * 7919) % ROWS}`] }),
    };
    const heap = new Session();
    const hpost = <T>(m: string, p: object = {}) => new Promise<T>((res, rej) => heap.post(m, p, (e, r) => (e ? rej(e) : res(r as T))));
    for (const name of process.env.ONLY?.split(',') ?? Object.keys(kinds)) {
      const fn = kinds[name];
      if (!fn) throw new Error(`unknown kind ${name}: ${Object.keys(kinds).join(', ')}`);
      for (let i = 0; i < 100; i++) await fn(i);
      const session = process.env.PROF === '1' ? new Session() : null;
      const post = <T>(m: string, p: object = {}) => new Promise<T>((res, rej) => session!.post(m, p, (e, r) => (e ? rej(e) : res(r as T))));
      if (session) {
        session.connect();
        await post('Profiler.enable');
        await post('Profiler.setSamplingInterval', { interval: 100 });
        await post('Profiler.start');
      }
      if (session === null && process.env.HEAP === '1') {
        heap.connect();
        await hpost('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
      }
      const g0 = gcs.length;
      const cur0 = sql.exec.currentFts;
      const ms: number[] = [];
      for (let i = 0; i < Q; i++) {
        const a = performance.now();
        await fn(i);
        ms.push(performance.now() - a);
      }
      const gc = gcs.slice(g0);
      console.log(`${name.padEnd(7)} p50 ${pct(ms, 50).toFixed(3)}  p90 ${pct(ms, 90).toFixed(3)}  p99 ${pct(ms, 99).toFixed(3)}  max ${Math.max(...ms).toFixed(2)} ms  GCs ${gc.length} (${gc.reduce((a, b) => a + b, 0).toFixed(1)} ms)  without a snapshot ${sql.exec.currentFts - cur0} of ${Q}`);
      if (session === null && process.env.HEAP === '1') {
        const { profile } = await hpost<{ profile: HeapNode & { head: HeapNode } }>('HeapProfiler.stopSampling');
        heap.disconnect();
        console.log(heapSites(profile.head, Q).join('\n'));
      }
      if (session) {
        const { profile } = await post<{ profile: Profile }>('Profiler.stop');
        session.disconnect();
        console.log(summary(profile).join('\n'));
      }
    }
    obs.disconnect();
    if (process.env.EFS) {
      // the walk's ef held at each value (the index's own efFor replaced on this instance only)
      const ann = vector.table('bench.items').ann as unknown as { efFor: (k: number, mode: string, passing?: number) => number };
      const own = ann.efFor.bind(ann);
      const vTruth = qs.map((q) => truth(corpus, q, Infinity, 20));
      const fTruth = await Promise.all(words.map(async (w) => (await ftsSearchRoute(sql, 'bench.items', 'body', w, 20, { feedback: 'none', proximity: 'none' })).map((d) => d.doc_id)));
      const idsOf = (r: unknown) => ((r as Array<{ rows: unknown[][]; names: string[] }>)[0]).rows.map((x) => String(x[0]));
      console.log(`calibrated ef for k = 20: ${own(20, 'high_recall')}`);
      for (const ef of process.env.EFS.split(',').map(Number)) {
        ann.efFor = (k) => Math.max(k, ef);
        let fused = 0;
        let vec = 0;
        const ms: number[] = [];
        for (let i = 0; i < qs.length; i++) {
          const t = performance.now();
          const got = idsOf(await sql.run(RRF_SQL, { params: [qs[i], words[i % words.length]] }));
          ms.push(performance.now() - t);
          const x = exactRrf(vTruth[i], fTruth[i % words.length]);
          fused += recallWithTies(got, x.want, x.accept);
          vec += recall(idsOf(await sql.run('SELECT id FROM bench.items ORDER BY emb <-> $1 LIMIT 20', { params: [qs[i]] })), vTruth[i]);
        }
        console.log(`ef ${String(ef).padStart(4)}: fused recall@10 ${(fused / qs.length).toFixed(3)}  vector recall@20 ${(vec / qs.length).toFixed(3)}  RRF p50 ${pct(ms, 50).toFixed(3)} ms`);
      }
      ann.efFor = own;
    }
    if (process.env.EXPLAIN === '1') {
      type N = { op?: string; time_ms?: number; detail?: string; children?: N[] };
      const flat = (n: N, d = 0): string[] => [`${'  '.repeat(d)}${n.op} ${n.time_ms ?? '?'} ms ${n.detail ?? ''}`, ...(n.children ?? []).flatMap((x) => flat(x, d + 1))];
      for (let j = 0; j < words.length; j++) {
        const r = await sql.run(RRF_SQL, { params: [qs[j], words[j]], explain: true });
        console.log(`explain RRF (${words[j]}):\n${flat(((r[0] as { explain?: { tree: N } }).explain?.tree) ?? {}).join('\n')}`);
      }
    }
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().then(undefined, (e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
