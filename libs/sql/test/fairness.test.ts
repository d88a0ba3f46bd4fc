/**
 * Fairness (issue 25 §3): a heavy query gives the event loop back every few ms of its work, and
 * heavy queries waiting for the loop are resumed one per loop iteration, so a point read gets in
 * between; a query in its first turns goes before the long-running ones. Behaviour is checked by
 * counting loop turns and by ordering, never by durations alone.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { TenantStore } from '@mmdb/storage';
import { SqlEngine } from '@mmdb/sql';
import { nextTurn, onTurn, SHORT_TURNS, STARVE_TURNS, turnsTaken, type TurnClass, type TurnTaker } from '../src/exec/turns';

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
  await sql.run('CREATE TABLE docs(id INTEGER PRIMARY KEY, tag TEXT, body TEXT)');
  await sql.run("INSERT INTO docs SELECT n, 't' || (n % 20), 'river stone ' || (n % 997) || ' cloud forest' FROM (WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 60000) SELECT n FROM s)");
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

  it('resumes a query in its first turns before long-running ones that asked earlier', async () => {
    const order: string[] = [];
    const long1: TurnTaker = { yields: SHORT_TURNS };
    const long2: TurnTaker = { yields: SHORT_TURNS + 7 };
    const fresh1: TurnTaker = { yields: 0 };
    const fresh2: TurnTaker = { yields: SHORT_TURNS - 1 };
    await Promise.all([
      nextTurn(long1).then(() => void order.push('long1')),
      nextTurn(long2).then(() => void order.push('long2')),
      nextTurn(fresh1).then(() => void order.push('fresh1')),
      nextTurn(fresh2).then(() => void order.push('fresh2')),
    ]);
    expect(order).toEqual(['fresh1', 'fresh2', 'long1', 'long2']);
    expect(fresh2.yields).toBe(SHORT_TURNS); // its next turn is a long one
  });

  it('lets a long-running query go after STARVE_TURNS short turns passed it over (no starvation)', async () => {
    const order: string[] = [];
    const shorts = Array.from({ length: STARVE_TURNS + 3 }, (_, i) => nextTurn({ yields: 0 }).then(() => void order.push(`s${i}`)));
    // asked after the short ones, so every one of them passes it over until it has waited STARVE_TURNS resumptions
    await Promise.all([...shorts, nextTurn({ yields: SHORT_TURNS }).then(() => void order.push('long'))]);
    expect(order.indexOf('long')).toBe(STARVE_TURNS);
  });

  it('gives a query issued while 4 heavy queries run its first turns back to back, ahead of theirs', async () => {
    const log: { who: TurnTaker | undefined; cls: TurnClass }[] = [];
    onTurn((who, cls) => void log.push({ who, cls }));
    try {
      const heavy = [CROSS, BFS, CTE, CROSS].map((q) => sql.run(q));
      // wait until the 4 heavy queries are all past their short turns
      const longOnes = () => new Set(log.filter((x) => x.cls === 'long').map((x) => x.who)).size;
      while (longOnes() < 4) await new Promise((r) => setImmediate(r));
      const before = new Set(log.map((x) => x.who));
      const from = log.length;
      const late = sql.run('SELECT count(*) FROM t a, t b WHERE a.v - b.v > 20000'); // many slices of work
      await late;
      const turns = log.slice(from);
      const mine = turns.map((x, i) => ({ ...x, i })).filter((x) => !before.has(x.who));
      expect(mine.length).toBeGreaterThanOrEqual(SHORT_TURNS);
      // its first SHORT_TURNS turns were short ones, resumed one after another: no heavy slice between them
      const first = mine.slice(0, SHORT_TURNS);
      expect(first.every((x) => x.cls === 'short')).toBe(true);
      expect(first[SHORT_TURNS - 1].i - first[0].i).toBe(SHORT_TURNS - 1);
      await Promise.all(heavy);
    } finally {
      onTurn(null);
    }
  });

  it('splits a filter under an aggregate over a cached table across turns (not one pass over every row)', async () => {
    // a GROUP BY whose WHERE keeps no row: every turn it gives back is the filter's; through the
    // filter's all() (every row at once, as the aggregate read it before) it would be one long turn
    const q = "SELECT tag, count(*) FROM docs WHERE body LIKE '%zz%' GROUP BY tag";
    await sql.run(q); // the table is in the cache from here on
    const { turns, perCpuSecond } = await turnsPerCpuSecond(q);
    expect(turns).toBeGreaterThanOrEqual(3);
    expect(perCpuSecond).toBeGreaterThanOrEqual(75);
  });

  it.each([['a cross join whose condition rejects every pair', CROSS], ['a recursive CTE whose step is a join', BFS]])('gives the loop back many times per CPU second of work: %s', async (_name, q) => {
    const { turns, perCpuSecond } = await turnsPerCpuSecond(q);
    expect(turns).toBeGreaterThanOrEqual(5);
    // slices of 1 ms: several hundred turns per CPU second (GC, other threads and setup count too);
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
