/**
 * A recursive CTE read once by the query is streamed into its reader (exec/with-op.ts): the
 * recursion's rows are not held, a LIMIT stops the recursion, and the answers are the ones the
 * materialized evaluation gives (a CTE read twice, or from a subquery or a later CTE, is still
 * materialized).
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { TenantStore } from '@mmdb/storage';
import { SqlEngine } from '@mmdb/sql';

jest.setTimeout(60_000);

let dir: string;
let store: TenantStore;
let sql: SqlEngine;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sql-cte-stream-'));
  store = await TenantStore.open({ dir, sync: false });
  sql = new SqlEngine(store);
  await sql.run('CREATE TABLE edges(src INTEGER, dst INTEGER)');
  await sql.run('INSERT INTO edges SELECT n % 50 + 1, (n * 17 + 3) % 60 + 1 FROM (WITH RECURSIVE s(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s WHERE n < 149) SELECT n FROM s)');
});

afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const rows = async (q: string, maxRows?: number) => ((await sql.run(q, { maxRows }))[0] as { rows: unknown[][] }).rows;
const COUNT = 'WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 100000) ';

describe('recursive CTE streamed into its one reader', () => {
  it('does not hold the recursion rows: 100,000 of them counted under a 1,000-row memory budget', async () => {
    expect(await rows(`${COUNT}SELECT count(*), sum(n) FROM c`, 1000)).toEqual([[100000n, 5000050000n]]);
  });

  it('still holds (and refuses past the budget) a CTE read twice or from a subquery', async () => {
    await expect(rows(`${COUNT}SELECT count(*) FROM c a, (SELECT max(n) AS m FROM c) b WHERE a.n = b.m`, 1000)).rejects.toMatchObject({ code: 'resource_exhausted' });
    await expect(rows(`${COUNT}SELECT (SELECT count(*) FROM c)`, 1000)).rejects.toMatchObject({ code: 'resource_exhausted' });
    expect(await rows(`${COUNT}SELECT count(*) FROM c a, (SELECT max(n) AS m FROM c) b WHERE a.n = b.m`)).toEqual([[1n]]);
    expect(await rows(`${COUNT}, d(m) AS (SELECT n FROM c WHERE n % 1000 = 0) SELECT count(*) FROM d`)).toEqual([[100n]]);
  });

  it('stops an unbounded recursion when its reader has enough rows (a LIMIT)', async () => {
    expect(await rows('WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT n FROM c LIMIT 5')).toEqual([[1n], [2n], [3n], [4n], [5n]]);
  });

  it('ends an unbounded streamed recursion at the time budget (query_timeout), a held one at the row budget', async () => {
    const endless = 'WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) ';
    await expect(sql.run(`${endless}SELECT count(*) FROM c`, { timeoutMs: 300 })).rejects.toMatchObject({ code: 'query_timeout' });
    await expect(sql.run(`${endless}SELECT max(a.n) FROM c a, c b`, { maxRows: 50_000 })).rejects.toMatchObject({ code: 'resource_exhausted' });
  });

  it('answers a UNION recursion (a BFS over a table) as the materialized evaluation does', async () => {
    const edges = (await rows('SELECT src, dst FROM edges')) as bigint[][];
    const reached = new Set<bigint>([1n]);
    for (let frontier = [1n]; frontier.length;) {
      const next: bigint[] = [];
      for (const [s, d] of edges) if (frontier.includes(s) && !reached.has(d)) { reached.add(d); next.push(d); }
      frontier = next;
    }
    const bfs = 'WITH RECURSIVE r(node) AS (SELECT 1 UNION SELECT e.dst FROM r, edges e WHERE e.src = r.node) ';
    const want = [...reached].sort((a, b) => Number(a - b)).map((x) => [x]);
    expect(await rows(`${bfs}SELECT node FROM r ORDER BY node`)).toEqual(want);
    // read twice: materialized, same rows
    expect(await rows(`${bfs}SELECT a.node FROM r a, r b WHERE a.node = b.node ORDER BY 1`)).toEqual(want);
  });
});
