/**
 * Crash test: a child process writes concurrently and is killed with SIGKILL at random
 * moments, for 20 rounds on the same store. After each kill the store is reopened and:
 * every acknowledged write is there (value and version), the one request each worker had
 * in flight is either wholly there or wholly absent, and verify() finds no difference
 * between rows and their derived index entries.
 */
import { spawn } from 'child_process';
import { mkdtempSync, readFileSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { TenantStore } from '@mmdb/storage';

type Change = { op: 'put'; row: { k: number; v: string; op: string } } | { op: 'delete'; pk: [number] };
interface Sent {
  id: string;
  w: number;
  changes: Change[];
}
type State = Map<number, { v: string; op: string; version: number }>;

const ROUNDS = 20;
const root = join(__dirname, '../../..');

function apply(state: State, changes: Change[]): State {
  const next = new Map(state);
  for (const c of changes) {
    if (c.op === 'put') next.set(c.row.k, { v: c.row.v, op: c.row.op, version: (next.get(c.row.k)?.version ?? 0) + 1 });
    else next.delete(c.pk[0]);
  }
  return next;
}

function runChild(dir: string, round: number, killAfterMs: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const linesPath = `${dir}.round${round}.lines`;
    const child = spawn(process.execPath, ['-r', '@swc-node/register', join(__dirname, 'crash-child.ts'), dir, String(round), linesPath], {
      cwd: root,
      env: { ...process.env, SWC_NODE_PROJECT: join(root, 'tsconfig.base.json') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    let timer: NodeJS.Timeout | undefined;
    child.stdout.on('data', (d) => {
      out += d;
      if (!timer && out.includes('READY\n')) timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    });
    child.stderr.on('data', (d) => (err += d));
    // 'close': the child is gone and its stdio drained
    child.on('close', (code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`child ended by itself (code ${code}): ${err}`));
      else {
        const lines = readFileSync(linesPath, 'utf8').split('\n').slice(0, -1); // the last piece may be a torn line
        rmSync(linesPath, { force: true });
        resolve(lines);
      }
    });
  });
}

async function readState(store: TenantStore): Promise<State> {
  const snap = store.snapshot();
  const s: State = new Map();
  for await (const b of snap.scanRows('crash.kv')) for (const r of b) s.set(r.values.k as number, { v: r.values.v as string, op: r.values.op as string, version: r.version });
  await snap.release();
  return s;
}

function equal(a: State, b: State, keys: number[]): boolean {
  return keys.every((k) => JSON.stringify(a.get(k) ?? null) === JSON.stringify(b.get(k) ?? null));
}

describe('crash safety under SIGKILL', () => {
  const dir = mkdtempSync(join(tmpdir(), 'crash-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(`keeps every acknowledged write and no half batch, over ${ROUNDS} kills`, async () => {
    let state: State = new Map();
    let seed = 12345;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % 400) + 100;
    let totalAcked = 0;
    let inFlightApplied = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const lines = await runChild(dir, round, rnd());
      const sent = new Map<string, Sent>();
      const acked = new Set<string>();
      for (const l of lines) {
        if (l.startsWith('SEND ')) {
          const s = JSON.parse(l.slice(5)) as Sent;
          sent.set(s.id, s);
        } else if (l.startsWith('ACK ')) acked.add(l.slice(4));
      }
      // Per worker: acked requests in order, then at most one in flight.
      const byWorker = new Map<number, Sent[]>();
      for (const s of sent.values()) byWorker.set(s.w, [...(byWorker.get(s.w) ?? []), s]);
      const store = await TenantStore.open({ dir });
      const actual = await readState(store);
      for (const [w, list] of byWorker) {
        const keys = [...new Set(list.flatMap((s) => s.changes.map((c) => (c.op === 'put' ? c.row.k : c.pk[0]))))];
        let model = state;
        for (const s of list.filter((x) => acked.has(x.id))) model = apply(model, s.changes);
        const pending = list.filter((x) => !acked.has(x.id));
        expect(pending.length).toBeLessThanOrEqual(1);
        const withPending = pending.length ? apply(model, pending[0].changes) : model;
        const okWithout = equal(actual, model, keys);
        const okWith = equal(actual, withPending, keys);
        if (!okWithout && !okWith) {
          throw new Error(`round ${round} worker ${w}: state matches neither the acknowledged writes nor them plus the in-flight request ${pending[0]?.id}`);
        }
        if (!okWithout && okWith) inFlightApplied++;
      }
      totalAcked += acked.size;
      const report = await store.verify();
      expect(report.differences).toEqual([]);
      expect(report.ok).toBe(true);
      state = actual;
      await store.close();
    }
    expect(totalAcked).toBeGreaterThan(ROUNDS * 10);
    void inFlightApplied;
  }, 240_000);
});
