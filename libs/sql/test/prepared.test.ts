/**
 * Cached plans over a real TenantStore: compiled operator trees reused per plan (params, subquery
 * results and CTE rows never leak between runs, concurrent runs never share a tree), and leaves
 * answered from the table cache without a snapshot only while the store has not written the table.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { TenantStore } from '@mmdb/storage';
import { SqlEngine, formatResult } from '@mmdb/sql';

let dir: string;
let store: TenantStore;
let sql: SqlEngine;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sql-prepared-'));
  store = await TenantStore.open({ dir, sync: false });
  sql = new SqlEngine(store);
  await sql.run('CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT, n INTEGER)');
  await sql.run(`INSERT INTO t VALUES ${Array.from({ length: 200 }, (_, i) => `(${i + 1}, 'v${i + 1}', ${i % 7})`).join(',')}`);
});

afterEach(async () => {
  await sql.tables.settled();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const rows = async (q: string, params?: unknown[]) => {
  const r = await sql.run(q, { params });
  return (formatResult(r[r.length - 1], 'arrays') as { rows: unknown[] }).rows;
};

/** Reads the table whole twice (warming the cache) and waits for background loads. */
async function warm(): Promise<void> {
  await rows('SELECT count(*) FROM t');
  await rows('SELECT count(*) FROM t');
  await sql.tables.settled();
}

describe('prepared plans', () => {
  it('binds each run its own params, on the cached-table path and the storage path', async () => {
    for (const cached of [false, true]) {
      if (cached) await warm();
      for (const k of [5, 17, 200, 201, 3]) {
        expect(await rows('SELECT v, n FROM t WHERE id = $1', [k])).toEqual(k <= 200 ? [[`v${k}`, (k - 1) % 7]] : []);
        expect(await rows('SELECT count(*), sum(n) FROM t WHERE id > $1 AND id <= $2', [k, k + 10])).toEqual([[Math.max(0, Math.min(200, k + 10) - k), k >= 200 ? null : expect.any(Number)]]);
      }
    }
    // a cached plan still refuses a missing parameter
    await expect(sql.run('SELECT v, n FROM t WHERE id = $1', { params: [] })).rejects.toMatchObject({ code: 'validation_failed' });
    expect(await rows('SELECT v, n FROM t WHERE id = $1', [8])).toEqual([['v8', 0]]);
  });

  it('sees every committed write on the next run (no stale cached rows, no stale subquery results)', async () => {
    await warm();
    const q = 'SELECT v, (SELECT max(n) FROM t) FROM t WHERE id = 9';
    expect(await rows(q)).toEqual([['v9', 6]]);
    expect(await rows('SELECT v FROM t WHERE id = 9')).toEqual([['v9']]);
    await store.put('main.t', { id: 9, v: 'nine', n: 40 });
    expect(await rows('SELECT v FROM t WHERE id = 9')).toEqual([['nine']]);
    expect(await rows(q)).toEqual([['nine', 40]]);
    await sql.run('DELETE FROM t WHERE id = 9', { deleteMode: 'execute' });
    expect(await rows('SELECT v FROM t WHERE id = 9')).toEqual([]);
    expect(await rows('SELECT count(*) FROM t WHERE id >= 1 AND id < 10')).toEqual([[8]]);
    // and a write through another engine over the same store
    await new SqlEngine(store).run(`INSERT INTO t VALUES (9, 'again', 1)`);
    expect(await rows('SELECT v FROM t WHERE id = 9')).toEqual([['again']]);
  });

  it('answers a warm pk lookup without a storage snapshot, also after a write (the cached table is patched with it)', async () => {
    await warm();
    const taken = jest.spyOn(store, 'readSnapshot');
    expect(await rows('SELECT v FROM t WHERE id = $1', [4])).toEqual([['v4']]);
    expect(await rows('SELECT v FROM t WHERE id = $1', [5])).toEqual([['v5']]);
    expect(await rows('SELECT count(*) FROM t WHERE id > 3 AND id < 9')).toEqual([[5]]);
    expect(taken).not.toHaveBeenCalled();
    const patches = sql.tables.stats().patches;
    await store.put('main.t', { id: 4, v: 'four', n: 1 });
    expect(await rows('SELECT v FROM t WHERE id = $1', [4])).toEqual([['four']]);
    expect(taken).not.toHaveBeenCalled();
    expect(sql.tables.stats().patches).toBe(patches + 1);
    taken.mockRestore();
  });

  it('keeps concurrent runs of one plan apart (each compiles or borrows its own tree)', async () => {
    await warm();
    const q = 'SELECT v, (SELECT count(*) FROM t u WHERE u.n = t.n) FROM t WHERE id > $1 AND id <= $2 ORDER BY id';
    const runs = await Promise.all(Array.from({ length: 12 }, (_, i) => rows(q, [i * 10, i * 10 + 3])));
    runs.forEach((r, i) => expect(r).toEqual([1, 2, 3].map((d) => [`v${i * 10 + d}`, (i * 10 + d - 1) % 7 < 4 ? 29 : 28])));
    const cte = 'WITH RECURSIVE c(x) AS (SELECT $1 UNION ALL SELECT x + 1 FROM c WHERE x < $2) SELECT sum(x), count(*) FROM c';
    const sums = await Promise.all([[1, 10], [5, 6], [1, 100]].map((p) => rows(cte, p)));
    expect(sums).toEqual([[[55, 10]], [[11, 2]], [[5050, 100]]]);
    expect(await rows(cte, [3, 3])).toEqual([[3, 1]]);
  });
});
