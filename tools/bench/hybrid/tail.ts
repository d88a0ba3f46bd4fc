/**
 * Where the tail of the hybrid lines comes from (README "tails"): loads ROWS rows like bench.ts,
 * then runs Q samples of each kind and prints, per kind, p50 / p90 / p99 / max, how many samples
 * were over 4× the p50, and how many server GCs (its `--trace-gc`) fell in the loop. With
 * PROF=1 the server runs under `--cpu-prof` (the profile is left in PROF_DIR, default /tmp).
 * Env: ROWS (20000), Q (2000), ONLY (comma list of 2hop,2hop-client,rrf,rrf-client,noop,get,row), WARM (50
 * unmeasured statements first), REPS (the loop that many times, p50/p99 and server GCs each), PREBUILD (1:
 * the graph adjacency built before the settle, as bench.ts does).
 * Not a benchmark of record: the figures are for finding where time goes.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { HOP_SQL, makeCorpus, manifest, pct, queries, RRF_SQL, QUERY_WORDS } from './data';
import { latencyBuckets, loadRows, tenantClient, TENANT, TOKEN } from './http';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startBuiltServer, NODE_ARGS } = require('../server.js');

const ROWS = Number(process.env.ROWS ?? 20_000);
const Q = Number(process.env.Q ?? 2000);

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-hybrid-tail-'));
  const prof = process.env.PROF === '1' ? ['--cpu-prof', '--cpu-prof-interval=100', `--cpu-prof-dir=${process.env.PROF_DIR ?? os.tmpdir()}`] : [];
  const env = { DB_SYNC: 'false', SQL_TABLE_CACHE_ROWS: String(Math.max(1_000_000, ROWS)) };
  const { proc, url, output } = await startBuiltServer(dir, { tenant: TENANT, token: TOKEN, env, nodeArgs: [...NODE_ARGS, '--trace-gc', ...prof] });
  try {
    const ca = fs.readFileSync(path.join(dir, 'tls', 'cert.pem'), 'utf8');
    const c = tenantClient(url, ca);
    const { corpus, lines } = makeCorpus(ROWS, 128);
    await c('POST', '/schemas', manifest(128), 'text/plain');
    // PREBUILD=1: the relation's adjacency is built before the settle, as bench.ts does
    if (process.env.PREBUILD === '1') await loadRows(c, lines, ROWS, 0).then(() => c('GET', '/graph/bench.items/bfs?rel=links&src=r0&depth=1'));
    else await loadRows(c, lines, ROWS, 0);
    await new Promise((r) => setTimeout(r, Math.max(5, ROWS / 20_000) * 1000)); // the load's background work (checkpoint, calibration)
    const qs = queries(corpus, 200);
    const words = QUERY_WORDS;
    const rrf = RRF_SQL;
    const hop = HOP_SQL;
    const src = (i: number) => `r${(i * 7919) % ROWS}`;
    const kinds: Array<[string, (i: number) => Promise<unknown>]> = [
      ['2hop', (i) => c('POST', '/sql', { sql: hop, params: [src(i)] })],
      ['2hop-client', async (i) => {
        const b = await c('GET', `/graph/bench.items/bfs?rel=links&src=${src(i)}&depth=2`);
        const rows = await Promise.all(b.slice(1).map((v: { node: string }) => c('GET', `/rows/bench.items/${v.node}`)));
        return rows.filter((r: { cat: number }) => r.cat < 500);
      }],
      ['rrf', (i) => c('POST', '/sql', { sql: rrf, params: [qs[i % 200], words[i % 4]] })],
      ['rrf-client', async (i) => {
        const [v, f] = await Promise.all([
          c('POST', '/vector/bench.items/topk', { vector: qs[i % 200], k: 20 }),
          c('GET', `/fts/bench.items/body?q=${encodeURIComponent(words[i % 4])}&limit=20&feedback=none&proximity=none`),
        ]);
        const s = new Map<string, number>();
        v.forEach((m: { id: string }, r: number) => s.set(m.id, (s.get(m.id) ?? 0) + 1 / (61 + r)));
        f.forEach((d: { doc_id: string }, r: number) => s.set(d.doc_id, (s.get(d.doc_id) ?? 0) + 1 / (61 + r)));
        return Promise.all([...s].sort((a, b) => b[1] - a[1]).slice(0, 10).map(([id]) => c('GET', `/rows/bench.items/${id}`)));
      }],
      ['noop', () => c('POST', '/sql', { sql: 'SELECT 1 AS x' })],
      // a parameterized primary-key read of the same table: the request shape of the 2-hop statement without the graph
      ['get', (i) => c('POST', '/sql', { sql: 'SELECT id, cat FROM bench.items WHERE id = $1', params: [src(i)] })],
      ['row', (i) => c('GET', `/rows/bench.items/${src(i)}`)],
    ];
    const only = process.env.ONLY?.split(',');
    console.log(`${ROWS} rows, ${Q} samples per kind`);
    for (const [name, fn] of kinds) {
      if (only && !only.includes(name)) continue;
      for (let i = 0; i < Number(process.env.WARM ?? 50); i++) await fn(i);
      if (process.env.REPS) {
        // the same loop REPS times in a row, Q samples each: does the tail shrink as the process warms (JIT)?
        const line: string[] = [];
        for (let rep = 0; rep < Number(process.env.REPS); rep++) {
          const ms: number[] = [];
          const o1 = output().length;
          for (let i = 0; i < Q; i++) {
            const t0 = performance.now();
            await fn(i + rep * Q);
            ms.push(performance.now() - t0);
          }
          const gc = output().slice(o1).split('\n').filter((l: string) => /Scavenge|Mark-Compact|Mark-sweep/i.test(l)).map((l: string) => /(Scavenge|Mark-Compact|Mark-sweep)[^,]*, ([\d.]+)/i.exec(l)).map((m: RegExpExecArray | null) => (m ? `${m[1][0]}${m[2]}` : '?'));
          line.push(`${pct(ms, 50).toFixed(2)}/${pct(ms, 99).toFixed(2)}${gc.length ? ` [${gc.join(' ')}]` : ''}`);
        }
        console.log(`${name.padEnd(12)} p50/p99 per loop of ${Q}: ${line.join('  ')}`);
        continue;
      }
      const surface = name.startsWith('row') ? 'none' : name.endsWith('client') ? (name.startsWith('rrf') ? 'vector' : 'graph') : 'sql';
      const h0 = await latencyBuckets(url, ca, surface);
      const o0 = output().length;
      const ms: number[] = [];
      // this process's own GCs during the loop (the client's pauses are in its samples too)
      const mine: number[] = [];
      const obs = new PerformanceObserver((l) => l.getEntries().forEach((e) => mine.push(e.duration)));
      obs.observe({ entryTypes: ['gc'] });
      for (let i = 0; i < Q; i++) {
        const t0 = performance.now();
        await fn(i);
        ms.push(performance.now() - t0);
      }
      obs.disconnect();
      const gcs = output().slice(o0).split('\n').filter((l: string) => /Scavenge|Mark-Compact|Mark-sweep/i.test(l));
      const p50 = pct(ms, 50);
      const slow = ms.filter((x) => x > 4 * p50).length;
      const worst = [...ms].sort((a, b) => b - a).slice(0, 6).map((x) => x.toFixed(1)).join(' ');
      console.log(`${name.padEnd(12)} p50 ${p50.toFixed(2)}  p90 ${pct(ms, 90).toFixed(2)}  p99 ${pct(ms, 99).toFixed(2)}  max ${Math.max(...ms).toFixed(1)}  >4×p50: ${slow}  server GCs ${gcs.length}, client GCs ${mine.length} (${mine.reduce((a, b) => a + b, 0).toFixed(1)} ms)  worst ${worst}`);
      const h1 = await latencyBuckets(url, ca, surface);
      const tot = (h1.get('+Inf') ?? 0) - (h0.get('+Inf') ?? 0);
      if (tot) console.log(`  server ${surface} latency: ${[...h1].filter(([le]) => le !== '+Inf').map(([le, n]) => `>${le}ms ${tot - (n - (h0.get(le) ?? 0))}`).slice(0, 6).join('  ')} (of ${tot})`);
      if (process.env.GCLOG) console.log(gcs.join('\n'));
    }
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
