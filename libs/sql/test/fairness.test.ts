/**
 * Fairness (issue 25 §3): a heavy query gives the event loop back every few ms of its work, and
 * heavy queries waiting for the loop are resumed one per loop iteration, so a point read gets in
 * between. Behaviour is checked by counting loop turns and by ordering, never by durations alone.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { TenantStore } from '@mmdb/storage';
import { SqlEngine } from '@mmdb/sql';
import { nextTurn, turnsTaken } from '../src/exec/turns';

jest.setTimeout(120_000);

let dir: string;
let store: TenantStore;
let sql: SqlEngine;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sql-fair-'));
  store = await TenantStore.open({ dir, sync: false });
  sql = new SqlEngine(store);
  await sql.run('CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER)');
  await sql.run('CREATE TABLE edges(src INTEGER, dst INTEGER)');
  await sql.run('INSERT INTO t SELECT n, (n * 7919) % 10007 FROM (WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 1500) SELECT n FROM s)');
  await sql.run('INSERT INTO edges SELECT n % 200 + 1, (n * 7919 + n / 200) % 200 + 1 FROM (WITH RECURSIVE s(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s WHERE n < 1599) SELECT n FROM s)');
});

afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const CROSS = 'SELECT count(*) FROM t a, t b WHERE a.v + b.v < 0'; // 2.25M pairs, every one rejected
const BFS = 'WITH RECURSIVE r(node, d) AS (SELECT 1, 0 UNION SELECT e.dst, r.d + 1 FROM r, edges e WHERE e.src = r.node AND r.d < 12) SELECT count(*) FROM r';
const CTE = 'WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 300000) SELECT count(*) FROM c';
const TOPK = 'SELECT id FROM t a ORDER BY v DESC, id LIMIT 1000';

/** Runs `q` counting the turns it hands back; per CPU second of this process (not wall time: a loaded host does not change it). */
async function turnsPerCpuSecond(q: string): Promise<{ turns: number; perCpuSecond: number }> {
  const t0 = turnsTaken();
  const c0 = process.cpuUsage();
  await sql.run(q);
  const c = process.cpuUsage(c0);
  const turns = turnsTaken() - t0;
  return { turns, perCpuSecond: turns / ((c.user + c.system) / 1e6) };
}

describe('fairness', () => {
  it('resumes the queries waiting for a turn one per loop iteration, in order', async () => {
    const order: number[] = [];
    const seen: number[] = [];
    let live = true;
    const tick = () => { seen.push(order.length); if (live) setImmediate(tick); };
    setImmediate(tick);
    await Promise.all([0, 1, 2, 3].map((i) => nextTurn().then(() => void order.push(i))));
    live = false;
    await new Promise((r) => setImmediate(r)); // the tick of the next loop turn records the last waiter
    expect(order).toEqual([0, 1, 2, 3]);
    // between two turns of the loop at most one waiter ran (a plain setImmediate each would run all 4 at once)
    for (let i = 1; i < seen.length; i++) expect(seen[i] - seen[i - 1]).toBeLessThanOrEqual(1);
  });

  it.each([['a cross join whose condition rejects every pair', CROSS], ['a recursive CTE whose step is a join', BFS]])('gives the loop back many times per CPU second of work: %s', async (_name, q) => {
    const { turns, perCpuSecond } = await turnsPerCpuSecond(q);
    expect(turns).toBeGreaterThanOrEqual(5);
    // slices of SLICE_MS = 4 ms: ~150-250 turns per CPU second (GC, other threads and setup count too);
    // a driver yielding every 20 ms, or an operator looping without yielding, stays under 50
    expect(perCpuSecond).toBeGreaterThanOrEqual(75);
  });

  it('answers a point read issued while 4 heavy queries are in flight before any of them', async () => {
    const done: string[] = [];
    const heavy = [CROSS, BFS, CTE, TOPK].map((q, i) => sql.run(q).then(() => void done.push(`heavy${i}`)));
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    const r = await sql.run('SELECT v FROM t WHERE id = 5');
    done.push('point');
    expect((r[0] as { rows: unknown[] }).rows).toEqual([[BigInt((5 * 7919) % 10007)]]);
    await Promise.all(heavy);
    // TOPK is light (a heap over 1,500 rows) and may finish first; the three heavy ones may not
    expect(done.indexOf('point')).toBeLessThan(done.indexOf('heavy0'));
    expect(done.indexOf('point')).toBeLessThan(done.indexOf('heavy1'));
    expect(done.indexOf('point')).toBeLessThan(done.indexOf('heavy2'));
  });
});
