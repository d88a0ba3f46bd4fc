/**
 * Where an HTTPS top-k spends its time beyond the search itself (see README.md):
 *
 *   node tools/bench/vector/run.js --overhead [--n 100000] [--data DIR] [--rounds 2]
 *        [--warmup 3000] [--block 3000] [--cpu-prof DIR] [--mode high_recall|fast]
 *        [--server-node-args '--max-semi-space-size=64'] [--stages-only] [--fresh] [--filter b10|b100]
 *
 * One built server holding the synthetic clustered set (loaded through `/put`, 16 in flight;
 * with `--data DIR` the loaded store is kept and later runs restart from its checkpoint), and
 * the same set in this process (`VectorTable`, built once and cached as its checkpoint image
 * in DIR). After a warm-up, three things are timed query by query, one after the other, never
 * overlapping: a no-op authenticated GET (`/_ping`), the top-k over HTTPS, and the same top-k
 * in-process. Then CPU per request: blocks of pings and of top-ks, with this process's
 * `process.cpuUsage()` and the server's utime+stime from /proc (10 ms ticks: blocks are
 * thousands of requests long). The server runs with `--trace-gc`; its collections during the
 * timed window are counted. `--cpu-prof DIR` also writes the server's CPU profile there;
 * `--fresh` times on a server that has just taken the puts instead of one restarted from its checkpoint.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as os from 'node:os';
import { HNSW_DEFAULTS, VectorTable, parseK, parseMetadata, parseMetric, parseMode, parseVector, type SearchMode } from '@mmdb/vector';
import { parse as secureJsonParse } from 'secure-json-parse';
import { clustered, groundTruth, loadHttps, now, pct, rows2d } from './bench';
import { gcStats, hostSteal, startBareServer, startServer, type Server } from './https';

const args = process.argv.slice(2);
const opt = (n: string, d: string) => {
  const i = args.indexOf(`--${n}`);
  return i >= 0 ? args[i + 1] : d;
};
const N = Number(opt('n', '100000'));
const D = 128;
const NQ = 500;
const ROUNDS = Number(opt('rounds', '2'));
const WARMUP = Number(opt('warmup', '3000'));
const BLOCK = Number(opt('block', '3000'));
const MODES = (opt('mode', 'high_recall,fast').split(',') as SearchMode[]);
/** `--filter b10` (10% of the set) or `--filter b100` (1%): every top-k, both sides, filtered to `{field: 3}`. */
const FILTER_FIELD = opt('filter', '');
const FILTER = FILTER_FIELD ? { [FILTER_FIELD]: 3 } : undefined;
const FILTER_MOD = FILTER_FIELD ? Number(FILTER_FIELD.slice(1)) : 1;

function serverCpuMs(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const parts = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return ((Number(parts[11]) + Number(parts[12])) * 1000) / 100; // utime + stime, 100 Hz ticks
}
const clientCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const f2 = (x: number) => x.toFixed(2);
const f0 = (x: number) => x.toFixed(0);

/** CPU µs per call of each step a top-k request goes through, in this process (no network). */
function stages(t: VectorTable, qs: number[][], mode: SearchMode): void {
  const reps = 4000;
  const h = (t.ann as unknown as { h: { setEf(n: number): void; searchKnn(q: number[], k: number): unknown } }).h;
  const bodies = qs.map((q) => JSON.stringify({ vector: q, k: 10, mode }));
  const parsed = bodies.map((b) => secureJsonParse(b, null, { protoAction: 'error', constructorAction: 'error' }) as { vector: number[]; k: number; mode: string });
  const queries = parsed.map((b) => parseVector('vector', b.vector, D));
  const answers = queries.map((q) => t.topk(q, { k: 10, mode }));
  const answerText = answers.map((a) => JSON.stringify(a));
  const ef = mode === 'fast' ? HNSW_DEFAULTS.ef_fast : HNSW_DEFAULTS.ef_high_recall;
  const steps: [string, (i: number) => unknown][] = [
    ['client: JSON.stringify(body)', (i) => JSON.stringify({ vector: qs[i], k: 10, mode })],
    ['server: secure-json-parse(body)', (i) => secureJsonParse(bodies[i], null, { protoAction: 'error', constructorAction: 'error' })],
    ['server: validate (vector, k, mode, metric, filter)', (i) => {
      const b = parsed[i];
      return [parseVector('vector', b.vector, D), parseK(b.k), parseMode(b.mode), parseMetric(undefined), parseMetadata('filter', undefined)];
    }],
    ['server: VectorTable.topk', (i) => t.topk(queries[i], { k: 10, mode })],
    ['  of which raw hnswlib searchKnn (array in)', (i) => {
      h.setEf(ef);
      return h.searchKnn(qs[i], 10);
    }],
    ['server: JSON.stringify(answer)', (i) => JSON.stringify(answers[i])],
    ['client: JSON.parse(answer)', (i) => JSON.parse(answerText[i])],
  ];
  console.log(`\n### ${mode}: CPU per step, in-process (${reps} calls each, µs)\n`);
  console.log('| step | µs |');
  console.log('|---|---|');
  for (const [name, fn] of steps) {
    for (let i = 0; i < 500; i++) fn(i % NQ);
    const c0 = clientCpuMs();
    for (let i = 0; i < reps; i++) fn(i % NQ);
    console.log(`| ${name} | ${(((clientCpuMs() - c0) * 1000) / reps).toFixed(1)} |`);
  }
  console.log(`\nbody ${Math.round(bodies.reduce((a, b) => a + b.length, 0) / NQ)} bytes, answer ${Math.round(answerText.reduce((a, b) => a + b.length, 0) / NQ)} bytes`);
}

export async function main(): Promise<void> {
  const dataDir = opt('data', '');
  const keep = dataDir !== '';
  const dir = keep ? path.resolve(dataDir) : fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-vector-overhead-'));
  fs.mkdirSync(dir, { recursive: true });
  const storeDir = path.join(dir, 'store');
  const marker = path.join(dir, `loaded-${N}`);
  const img = path.join(dir, `inproc-${N}.img`);

  console.log(`vector HTTPS overhead — node ${process.version}, ${N.toLocaleString()} × ${D}, load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  const syn = clustered(N, D, 42);
  const qs = rows2d(clustered(NQ, D, 43), D, NQ);
  const meta = (i: number) => ({ b10: i % 10, b100: i % 100 });

  // the in-process table (this process), from its cached image when there is one
  let t: VectorTable;
  const b0 = now();
  if (fs.existsSync(img)) t = VectorTable.deserialize('syn', fs.readFileSync(img));
  else {
    t = new VectorTable('syn', { dim: D, metric: 'l2', index: 'auto', params: {} });
    for (let i = 0; i < N; i++) t.upsert(String(i), syn.subarray(i * D, (i + 1) * D), meta(i));
    if (keep) fs.writeFileSync(img, t.serialize());
  }
  console.log(`in-process table ready in ${f0(now() - b0)} ms`);
  const gt = groundTruth('l2', syn, N, D, qs, 10, FILTER ? (i) => i % FILTER_MOD === 3 : undefined);
  for (const mode of MODES) stages(t, qs, mode);
  if (args.includes('--stages-only')) return;

  // the server's store: loaded once through /put, then reopened from its checkpoint
  const profDir = opt('cpu-prof', '');
  const extra = opt('server-node-args', '').split(' ').filter(Boolean);
  const nodeArgs = ['--trace-gc', ...extra, ...(profDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(profDir)}`] : [])];
  let srv: Server;
  if (args.includes('--fresh')) {
    // time on the server that has just taken the puts (no restart): a fresh store in a temp dir
    srv = await startServer({ nodeArgs });
    const l0 = now();
    await loadHttps(srv, 'syn', syn, N, D, 'l2', meta);
    console.log(`loaded over HTTPS in ${f0(now() - l0)} ms; timing on this server (not restarted)`);
    console.log(`server quiet after ${f0(await srv.settle())} ms`);
  } else {
    if (!fs.existsSync(marker)) {
      fs.rmSync(storeDir, { recursive: true, force: true });
      const loader = await startServer({ dataDir: storeDir });
      const l0 = now();
      try {
        await loadHttps(loader, 'syn', syn, N, D, 'l2', meta);
      } finally {
        await loader.stop(); // SIGTERM: the store checkpoints at close
      }
      console.log(`loaded over HTTPS in ${f0(now() - l0)} ms`);
      fs.writeFileSync(marker, '');
    }
    const s0 = now();
    srv = await startServer({ dataDir: storeDir, nodeArgs });
    console.log(`server up (from checkpoint) in ${f0(now() - s0)} ms`);
  }
  const pid = srv.proc.pid!;
  const bare = await startBareServer(path.join(srv.dir, 'tls'));
  const barePid = bare.pid;
  try {
    for (const mode of MODES) {
      const body = (q: number[]) => ({ vector: q, k: 10, mode, filter: FILTER });
      const lean = await srv.lean();
      const floor = await bare.lean();
      // warm-up: JIT of both ends, the connections, and the route
      for (let i = 0; i < WARMUP; i++) {
        await srv.post('/vector/syn/topk', body(qs[i % NQ]));
        await srv.get('/_ping');
        await lean.post('/vector/syn/topk', body(qs[i % NQ]));
        await lean.get('/_ping');
        await floor.post('/floor', body(qs[i % NQ]));
        t.topk(qs[i % NQ], { k: 10, mode, filter: FILTER });
      }
      // interleaved, query by query: whatever the neighbours do hits every path alike
      const paths = {
        ping: [] as number[],
        https: [] as number[],
        leanPing: [] as number[],
        leanHttps: [] as number[],
        inproc: [] as number[],
        floor: [] as number[],
      };
      const rec = { https: 0, leanHttps: 0, inproc: 0 };
      const recall = (got: { id: string }[], i: number) => {
        const truth = new Set(gt[i].map(String));
        return got.filter((m) => truth.has(m.id)).length / 10;
      };
      const gcFrom = srv.stdout().length;
      const steal = hostSteal();
      for (let r = 0; r < ROUNDS; r++)
        for (let i = 0; i < NQ; i++) {
          let t0 = now();
          await srv.get('/_ping');
          paths.ping.push(now() - t0);
          t0 = now();
          rec.https += recall(await srv.post('/vector/syn/topk', body(qs[i])), i);
          paths.https.push(now() - t0);
          t0 = now();
          await lean.get('/_ping');
          paths.leanPing.push(now() - t0);
          t0 = now();
          rec.leanHttps += recall(await lean.post('/vector/syn/topk', body(qs[i])), i);
          paths.leanHttps.push(now() - t0);
          t0 = now();
          rec.inproc += recall(t.topk(qs[i], { k: 10, mode, filter: FILTER }), i);
          paths.inproc.push(now() - t0);
          t0 = now();
          await floor.post('/floor', body(qs[i]));
          paths.floor.push(now() - t0);
        }
      const stolen = steal();
      const gc = gcStats(srv.stdout().slice(gcFrom));
      if (args.includes("--show-gc")) console.log(srv.stdout().slice(gcFrom).split("\n").filter((l) => /Scavenge|Mark/.test(l)).slice(0, 3).join("\n"));
      const n = ROUNDS * NQ;
      // CPU per request, in blocks
      const cpu = async (fn: (i: number) => Promise<unknown> | unknown, serverPid = pid) => {
        const g0 = srv.stdout().length;
        const c0 = clientCpuMs();
        const s0 = serverCpuMs(serverPid);
        const w0 = now();
        for (let i = 0; i < BLOCK; i++) await fn(i);
        const c = { client: ((clientCpuMs() - c0) * 1000) / BLOCK, server: ((serverCpuMs(serverPid) - s0) * 1000) / BLOCK, wall: ((now() - w0) * 1000) / BLOCK };
        await new Promise((r) => setTimeout(r, 50)); // the server's last trace lines
        return { ...c, gc: gcStats(srv.stdout().slice(g0)).scavenges };
      };
      const blocks: [string, Awaited<ReturnType<typeof cpu>>][] = [
        ['GET /_ping (node:https)', await cpu(() => srv.get('/_ping'))],
        ['POST topk (node:https)', await cpu((i) => srv.post('/vector/syn/topk', body(qs[i % NQ])))],
        ['GET /_ping (lean client)', await cpu(() => lean.get('/_ping'))],
        ['POST topk (lean client)', await cpu((i) => lean.post('/vector/syn/topk', body(qs[i % NQ])))],
        ['in-process topk', await cpu((i) => t.topk(qs[i % NQ], { k: 10, mode, filter: FILTER }))],
        ['floor: top-k body to the bare node:https server (lean client)', await cpu((i) => floor.post('/floor', body(qs[i % NQ])), barePid)],
      ];
      lean.close();
      floor.close();

      console.log(`\n### ${mode}: ${n} queries interleaved, load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}, host steal ${stolen.toFixed(1)}%\n`);
      console.log('| path | recall@10 | p50 ms | p90 ms | p99 ms | max ms |');
      console.log('|---|---|---|---|---|---|');
      const row = (name: string, xs: number[], r?: number) => console.log(`| ${name} | ${r === undefined ? '' : (r / n).toFixed(3)} | ${f2(pct(xs, 50))} | ${f2(pct(xs, 90))} | ${f2(pct(xs, 99))} | ${f2(Math.max(...xs))} |`);
      row('no-op GET /_ping, node:https client', paths.ping);
      row('top-k over HTTPS, node:https client', paths.https, rec.https);
      row('no-op GET /_ping, lean client', paths.leanPing);
      row('top-k over HTTPS, lean client', paths.leanHttps, rec.leanHttps);
      row('top-k in-process', paths.inproc, rec.inproc);
      row('floor: top-k body to a bare node:https server, lean client', paths.floor);
      const added = (xs: number[]) => `p50 ${f2(pct(xs, 50) - pct(paths.inproc, 50))} ms, p99 ${f2(pct(xs, 99) - pct(paths.inproc, 99))} ms`;
      console.log(`\nadded by HTTPS (target ≤ 1.5 ms at p99): node:https ${added(paths.https)}; lean client ${added(paths.leanHttps)}`);
      console.log(`server GC during the timed window (${4 * n} requests): ${gc.scavenges} minor, ${gc.marks} major, ${f2(gc.totalMs)} ms in all, longest ${f2(gc.maxMs)} ms`);
      console.log(`\nCPU per request (µs; ${BLOCK} in a block; server from /proc at 10 ms ticks):\n`);
      console.log('| block | client µs | server µs | wall µs | server minor GCs |');
      console.log('|---|---|---|---|---|');
      for (const [name, c] of blocks) console.log(`| ${name} | ${f0(c.client)} | ${f0(c.server)} | ${f0(c.wall)} | ${c.gc} |`);
    }
  } finally {
    await bare.stop();
    await srv.stop();
    if (!keep) fs.rmSync(dir, { recursive: true, force: true });
  }
}
