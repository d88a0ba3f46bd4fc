/**
 * Per-statement cost of the hybrid plans (README "per-statement cost"): server CPU (from
 * /proc/<pid>/stat), allocation and GC (the server's `--trace-gc-nvp`), and with HEAP=1 where the
 * allocation comes from (V8's sampling heap profiler, collected objects included), for Q
 * statements of each kind against the built server at ROWS rows. Not a latency benchmark: the
 * figures hold on a loaded host, where latencies do not.
 * Env: ROWS (20000), Q (1000), ONLY (comma list of rrf,2hop,vec,fts,noop,row), HEAP (1: top sites).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { HOP_SQL, makeCorpus, manifest, pct, queries, RRF_SQL, QUERY_WORDS } from './data';
import { loadRows, tenantClient, TENANT, TOKEN } from './http';

const ROOT = path.resolve(__dirname, '../../..');
const ROWS = Number(process.env.ROWS ?? 20_000);
const Q = Number(process.env.Q ?? 1000);
const HEAP = process.env.HEAP === '1';

/** The built server with `--trace-gc-nvp` (and the heap sampler with HEAP=1); `stop()` ends it and removes its data. */
function start(dir: string): Promise<{ proc: ChildProcess; url: string; out: () => string; stop: () => Promise<void> }> {
  const args = [...(HEAP ? ['--require', path.join(__dirname, 'heap-sampler.js')] : []), '--max-semi-space-size=64', '--trace-gc-nvp', path.join(ROOT, 'dist/apps/api/main.js')];
  const proc = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', DB_DATA_DIR: dir, DB_PORT: '0', DB_HOST: '127.0.0.1', DB_LOG_LEVEL: 'warn', DB_BOOTSTRAP_TENANT: TENANT, DB_BOOTSTRAP_TOKEN: TOKEN, DB_SYNC: 'false', HEAP_OUT: path.join(dir, 'heap.json') },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  return new Promise((resolve, reject) => {
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (\S+)/.exec(out);
      if (m) {
        const stop = async () => {
          proc.kill('SIGTERM');
          await new Promise((r) => proc.once('exit', r));
          fs.rmSync(dir, { recursive: true, force: true });
        };
        resolve({ proc, url: m[1], out: () => out, stop });
      }
    });
    proc.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
}

/** User + system CPU of a process so far, ms. */
const cpuMs = (pid: number) => {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * (1000 / 100);
};

/** Sums of `--trace-gc-nvp` lines: collections, pause ms, bytes allocated and promoted. */
function gcSums(text: string) {
  let n = 0, pause = 0, alloc = 0, promoted = 0;
  for (const m of text.matchAll(/pause=([\d.]+).*?allocated=(\d+).*?promoted=(\d+)/g)) {
    n++;
    pause += Number(m[1]);
    alloc += Number(m[2]);
    promoted += Number(m[3]);
  }
  return { n, pause, alloc, promoted };
}

/** The heaviest allocating functions (self) of a sampling heap profile, KB per statement. */
function topSites(file: string, stmts: number, n = 12): string[] {
  const p = JSON.parse(fs.readFileSync(file, 'utf8'));
  const self = new Map<string, number>();
  const walk = (x: any) => {
    const k = `${x.callFrame.functionName || '(anon)'} ${x.callFrame.url.split('/').slice(-2).join('/')}:${x.callFrame.lineNumber + 1}`;
    self.set(k, (self.get(k) ?? 0) + x.selfSize);
    x.children.forEach(walk);
  };
  walk(p.head);
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  return [`sampled ${(total / 1024 / stmts).toFixed(0)} KB/stmt`, ...[...self].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `  ${(v / 1024 / stmts).toFixed(1).padStart(6)} KB  ${k}`)];
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-hybrid-stmt-'));
  const { proc, url, out, stop } = await start(dir);
  try {
    const ca = fs.readFileSync(path.join(dir, 'tls', 'cert.pem'), 'utf8');
    const c = tenantClient(url, ca);
    const { corpus, lines } = makeCorpus(ROWS, 128);
    await c('POST', '/schemas', manifest(128), 'text/plain');
    await loadRows(c, lines, ROWS, 5000); // then the load's background work (checkpoint, calibration)
    const qs = queries(corpus, 200);
    const words = QUERY_WORDS;
    const rrf = RRF_SQL;
    const hop = HOP_SQL;
    const kinds: Array<[string, (i: number) => Promise<unknown>]> = [
      ['rrf', (i) => c('POST', '/sql', { sql: rrf, params: [qs[i % 200], words[i % 4]] })],
      ['2hop', (i) => c('POST', '/sql', { sql: hop, params: [`r${(i * 7919) % ROWS}`] })],
      ['vec', (i) => c('POST', '/vector/bench.items/topk', { vector: qs[i % 200], k: 20 })],
      ['fts', (i) => c('GET', `/fts/bench.items/body?q=${encodeURIComponent(words[i % 4])}&limit=20&feedback=none&proximity=none`)],
      ['noop', () => c('POST', '/sql', { sql: 'SELECT 1 AS x' })],
      // one of the client assembly's row GETs (it makes ten per RRF answer)
      ['row', (i) => c('GET', `/rows/bench.items/r${(i * 7919) % ROWS}`)],
    ];
    const only = process.env.ONLY?.split(',');
    console.log(`${ROWS} rows, ${Q} statements per kind; server CPU and allocation per statement (allocation: the GCs' "allocated" in the loop)`);
    for (const [name, fn] of kinds) {
      if (only && !only.includes(name)) continue;
      for (let i = 0; i < 50; i++) await fn(i);
      if (HEAP) proc.kill('SIGWINCH');
      const o0 = out().length;
      const c0 = cpuMs(proc.pid!);
      const ms: number[] = [];
      for (let i = 0; i < Q; i++) {
        const t0 = performance.now();
        await fn(i);
        ms.push(performance.now() - t0);
      }
      const cpu = (cpuMs(proc.pid!) - c0) / Q;
      const g = gcSums(out().slice(o0));
      console.log(`${name.padEnd(5)} CPU ${cpu.toFixed(3)} ms  p50 ${pct(ms, 50).toFixed(2)} / p99 ${pct(ms, 99).toFixed(2)} ms  GCs ${g.n} (${g.pause.toFixed(1)} ms)  allocated ≈${(g.alloc / Q / 1024).toFixed(0)} KB  promoted ${(g.promoted / Q / 1024).toFixed(1)} KB`);
      if (HEAP) {
        proc.kill('SIGWINCH');
        const file = path.join(dir, 'heap.json');
        for (let t = 0; t < 100 && !fs.existsSync(file); t++) await new Promise((r) => setTimeout(r, 100));
        console.log(topSites(file, Q).join('\n'));
        fs.rmSync(file, { force: true });
      }
    }
  } finally {
    await stop();
  }
}

main().then(
  () => undefined,
  (e) => {
    console.error(e);
    process.exitCode = 1;
  },
);
