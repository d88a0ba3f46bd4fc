/**
 * WatchQuery against a real store: a client that applies every change event to the result it
 * got from the first snapshot always holds exactly what the query answers now (rows and
 * aggregates, random writes, fast-check), the matching work is two row evaluations per changed
 * row whatever the table size, and unsupported shapes are refused before any stream.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import fc from 'fast-check';
import { TenantStore } from '@mmdb/storage';
import { SqlEngine, WatchQuery, type WatchChange } from '@mmdb/sql';

let dir: string;
let store: TenantStore;
let sql: SqlEngine;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'watch-'));
  store = await TenantStore.open({ dir, sync: false });
  sql = new SqlEngine(store);
  await sql.run('CREATE TABLE t (id INTEGER PRIMARY KEY, cat TEXT, price REAL, qty INTEGER)');
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function snapshotOf(q: WatchQuery): Promise<{ lsn: number; rows: Record<string, unknown>[] }> {
  const snap = store.snapshot();
  try {
    return { lsn: snap.lsn, rows: await q.snapshot(snap) };
  } finally {
    await snap.release();
  }
}

/** Every change event since `from`, one burst per feed batch. */
async function changesSince(q: WatchQuery, from: number): Promise<WatchChange[]> {
  if (store.lastLsn === from) return [];
  const feed = store.changesFrom({ epoch: store.epoch, lsn: from });
  const out: WatchChange[] = [];
  try {
    for (;;) {
      const b = await feed.next();
      out.push(...q.match(b!.entries.map((e) => e.frame)));
      if (b!.cursor.lsn >= store.lastLsn) return out;
    }
  } finally {
    feed.close();
  }
}

/** Applies change events to a result kept by key (as a client of the stream would). */
function applyTo(result: Map<string, Record<string, unknown>>, changes: WatchChange[]): void {
  for (const c of changes) {
    const k = JSON.stringify(c.key);
    if (c.op === 'delete') {
      expect(result.get(k)).toEqual(c.old);
      result.delete(k);
    } else {
      if (c.op === 'update') expect(result.get(k)).toEqual(c.old);
      else expect(result.has(k)).toBe(false);
      result.set(k, c.new!);
    }
  }
}

const write = fc.record({
  id: fc.integer({ min: 1, max: 12 }),
  del: fc.boolean(),
  cat: fc.constantFrom('a', 'b', 'c'),
  price: fc.oneof(fc.integer({ min: 0, max: 20 }), fc.constant(null)),
  qty: fc.integer({ min: -3, max: 9 }),
});

/**
 * Random bursts of writes; after each, the result kept from the first snapshot plus the change
 * events equals the query's answer now (a fresh subscription's snapshot).
 */
async function followsQuery(text: string, key: string): Promise<void> {
  const keyOf = (r: Record<string, unknown>) => JSON.stringify([r[key]]);
  const q = WatchQuery.compile(sql, { sql: text });
  await fc.assert(
    fc.asyncProperty(fc.array(fc.array(write, { minLength: 1, maxLength: 4 }), { maxLength: 6 }), async (bursts) => {
      const result = new Map((await snapshotOf(q)).rows.map((r) => [keyOf(r), r]));
      for (const burst of bursts) {
        const from = store.lastLsn;
        for (const w of burst) {
          if (w.del) await store.delete('main.t', [w.id]);
          else await store.put('main.t', { id: w.id, cat: w.cat, price: w.price, qty: w.qty });
        }
        applyTo(result, await changesSince(q, from));
        const now = await snapshotOf(WatchQuery.compile(sql, { sql: text }));
        expect(new Map(now.rows.map((r) => [keyOf(r), r]))).toEqual(result);
      }
    }),
    { numRuns: 25 },
  );
}

describe('WatchQuery', () => {
  it('row queries: snapshot + change events = the query now, after any writes', async () => {
    await followsQuery("SELECT id, qty * 2 AS q2, cat FROM t WHERE price > 5 AND cat <> 'c'", 'id');
  });

  it('aggregate queries: groups kept incrementally answer as the query does (HAVING, count, sum, avg, min, max)', async () => {
    await followsQuery(
      'SELECT cat, count(*) AS n, count(price) AS np, sum(qty) AS s, total(price) AS tp, avg(price) AS ap, min(price) AS lo, max(qty) AS hi FROM t WHERE qty >= 0 GROUP BY cat HAVING count(*) > 1',
      'cat',
    );
  });

  it('an aggregate without GROUP BY always has its one row', async () => {
    const q = WatchQuery.compile(sql, { sql: 'SELECT count(*) AS n, sum(qty) AS s FROM t' });
    expect((await snapshotOf(q)).rows).toEqual([{ n: 0, s: null }]);
    let from = store.lastLsn;
    await store.put('main.t', { id: 1, cat: 'a', price: 1, qty: 4 });
    expect(await changesSince(q, from)).toEqual([{ schema: 'main.t', key: [], op: 'update', old: { n: 0, s: null }, new: { n: 1, s: 4 } }]);
    from = store.lastLsn;
    await store.delete('main.t', [1]);
    expect(await changesSince(q, from)).toEqual([{ schema: 'main.t', key: [], op: 'update', old: { n: 1, s: 4 }, new: { n: 0, s: null } }]);
  });

  it('matches with work per changed row, not per row of the table', async () => {
    const q = WatchQuery.compile(sql, { sql: 'SELECT id FROM t WHERE qty > 5' });
    await sql.run(`INSERT INTO t SELECT value, 'a', 1.0, value % 10 FROM (WITH RECURSIVE s(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM s WHERE value < 5000) SELECT value FROM s)`);
    const from = store.lastLsn;
    q.evaluations = 0;
    await store.put('main.t', { id: 6, cat: 'a', price: 1, qty: 0 }); // update: before and after
    await store.put('main.t', { id: 9001, cat: 'a', price: 1, qty: 9 }); // insert: after only
    await store.delete('main.t', [7]); // delete: before only
    const ch = await changesSince(q, from);
    expect(ch.map((c) => [c.op, c.key[0]])).toEqual([['delete', 6], ['insert', 9001], ['delete', 7]]);
    expect(q.evaluations).toBe(4);
    expect(q.rowChanges).toBe(3);
  });

  it('subscribers compiled alike share one row query (one match per burst); anything that changes a result makes its own', async () => {
    const text = 'SELECT id, qty FROM t WHERE qty > $1';
    const a = WatchQuery.compile(sql, { sql: text, params: [5] });
    expect(WatchQuery.compile(sql, { sql: text, params: [5] })).toBe(a);
    const policy = { leafFilter: () => undefined, leafMasks: () => undefined };
    const distinct = [
      WatchQuery.compile(sql, { sql: text, params: [6] }), // other parameter values
      WatchQuery.compile(sql, { sql: 'SELECT id FROM t WHERE qty > $1', params: [5] }), // another projection
      WatchQuery.compile(sql, { sql: text, params: [5] }, { policy, key: 'u#1' }), // a subscriber's policy
      WatchQuery.compile(sql, { sql: text, params: [5] }, { policy, key: 'u#2' }),
      WatchQuery.compile(sql, { sql: text, params: [5] }, { policy, key: '' }), // a policy naming no one is never shared
      WatchQuery.compile(sql, { sql: 'SELECT cat, sum(qty) AS s FROM t GROUP BY cat' }), // an aggregate keeps its own groups
    ];
    expect(new Set([a, ...distinct]).size).toBe(7);
    expect(WatchQuery.compile(sql, { sql: text, params: [5] }, { policy, key: 'u#1' })).toBe(distinct[2]);
    expect(WatchQuery.compile(sql, { sql: text, params: [5] }, { policy, key: '' })).not.toBe(distinct[4]);
    expect(WatchQuery.compile(sql, { sql: 'SELECT cat, sum(qty) AS s FROM t GROUP BY cat' })).not.toBe(distinct[5]);
    // the shared instance matches as a fresh one does
    const from = store.lastLsn;
    await store.put('main.t', { id: 1, cat: 'a', price: 1, qty: 9 });
    await store.put('main.t', { id: 1, cat: 'a', price: 1, qty: 2 });
    expect(await changesSince(a, from)).toEqual([
      { schema: 'main.t', key: [1], op: 'insert', new: { id: 1, qty: 9 } },
      { schema: 'main.t', key: [1], op: 'delete', old: { id: 1, qty: 9 } },
    ]);
    // the table registered again (a new manifest): a new compile is not the old instance
    await sql.run('DROP TABLE t');
    await sql.run('CREATE TABLE t (id INTEGER PRIMARY KEY, cat TEXT, price REAL, qty INTEGER, extra TEXT)');
    expect(WatchQuery.compile(sql, { sql: text, params: [5] })).not.toBe(a);
  });

  it('refuses what it cannot follow row by row, with the surface\'s error code', () => {
    const refused = (s: string) => {
      try {
        WatchQuery.compile(sql, { sql: s });
      } catch (e) {
        return (e as { code: string }).code;
      }
      return 'accepted';
    };
    expect(refused('SELECT a.id FROM t a JOIN t b ON a.id = b.id')).toBe('unsupported_sql');
    expect(refused('SELECT id FROM t ORDER BY id LIMIT 2')).toBe('unsupported_sql');
    expect(refused('SELECT DISTINCT cat FROM t')).toBe('unsupported_sql');
    expect(refused('SELECT id FROM t WHERE id IN (SELECT id FROM t)')).toBe('unsupported_sql');
    expect(refused('SELECT group_concat(cat) FROM t')).toBe('unsupported_sql');
    expect(refused('SELECT count(DISTINCT cat) FROM t')).toBe('unsupported_sql');
    expect(refused('SELECT id FROM t; SELECT 1')).toBe('unsupported_sql');
    expect(refused('SELECT id, cat FROM t WHERE price > 1 ORDER BY cat')).toBe('accepted');
    try {
      WatchQuery.compile(sql, { plan: { op: 'limit', input: { op: 'scan', schema: 'main.t' }, count: 1 } as never });
      throw new Error('accepted');
    } catch (e) {
      expect((e as { code: string }).code).toBe('validation_failed');
    }
    // a point lookup is followed as a scan filtered on the key
    const g = WatchQuery.compile(sql, { plan: { op: 'get', schema: 'main.t', key: [{ kind: 'lit', value: 3 }] } });
    expect(g.kind).toBe('rows');
  });

  it('binds $n parameters in the filter, the projection and HAVING', async () => {
    const q = WatchQuery.compile(sql, { sql: 'SELECT id, qty + $2 AS q FROM t WHERE price > $1', params: [5, 100] });
    const a = WatchQuery.compile(sql, { sql: 'SELECT cat, count(*) AS n FROM t WHERE qty > $1 GROUP BY cat HAVING count(*) >= $2', params: [0, 2] });
    await snapshotOf(a);
    const from = store.lastLsn;
    await store.put('main.t', { id: 1, cat: 'a', price: 9, qty: 1 });
    await store.put('main.t', { id: 2, cat: 'a', price: 1, qty: 2 });
    expect((await changesSince(q, from)).map((c) => c.new)).toEqual([{ id: 1, q: 101 }]);
    expect((await changesSince(a, from)).map((c) => [c.op, c.new])).toEqual([['insert', { cat: 'a', n: 2 }]]);
  });

  it('applies the Policy port to events as to queries: a row the caller may not see is never sent, and leaving its sight is a delete', async () => {
    const policy = {
      leafFilter: (leaf: { schema?: string; alias?: string }) =>
        leaf.schema === 'main.t' ? ({ kind: 'binary', op: '<>', left: { kind: 'col', name: leaf.alias ? `${leaf.alias}.cat` : 'cat' }, right: { kind: 'lit', value: 'secret' } } as never) : undefined,
    };
    const guarded = new SqlEngine(store, undefined, { policy });
    const q = WatchQuery.compile(guarded, { sql: 'SELECT id, cat FROM t WHERE qty > 0' });
    await store.put('main.t', { id: 1, cat: 'secret', price: 1, qty: 1 });
    expect((await snapshotOf(q)).rows).toEqual([]);
    const from = store.lastLsn;
    await store.put('main.t', { id: 2, cat: 'secret', price: 1, qty: 1 }); // hidden: nothing
    await store.put('main.t', { id: 3, cat: 'open', price: 1, qty: 1 }); // insert
    await store.put('main.t', { id: 3, cat: 'secret', price: 1, qty: 1 }); // leaves the caller's sight: delete
    await store.put('main.t', { id: 1, cat: 'open', price: 1, qty: 1 }); // comes into sight: insert
    expect((await changesSince(q, from)).map((c) => [c.op, c.key[0]])).toEqual([['insert', 3], ['delete', 3], ['insert', 1]]);
    expect((await snapshotOf(q)).rows).toEqual([{ id: 1, cat: 'open' }]);
  });

  it('runs under a subscriber\'s own policy (WatchPolicy): rows filtered, masked columns masked in old, new and the snapshot', async () => {
    const col = (leaf: { alias?: string }, c: string) => (leaf.alias ? `${leaf.alias}.${c}` : c);
    const policy = {
      leafFilter: (leaf: { schema?: string; alias?: string }) =>
        leaf.schema === 'main.t' ? ({ kind: 'binary', op: '<>', left: { kind: 'col', name: col(leaf, 'cat') }, right: { kind: 'lit', value: 'secret' } } as never) : undefined,
      // qty is seen as -1 (a mask)
      leafMasks: (leaf: { schema?: string; alias?: string }) =>
        leaf.schema === 'main.t' ? new Map([[col(leaf, 'qty'), { kind: 'lit', value: -1 } as never]]) : undefined,
    };
    await store.put('main.t', { id: 1, cat: 'open', price: 1, qty: 71 });
    await store.put('main.t', { id: 2, cat: 'secret', price: 1, qty: 72 });
    const rows = WatchQuery.compile(sql, { sql: 'SELECT id, cat, qty FROM t WHERE price > 0' }, { policy, key: 'u#1' });
    const masked = WatchQuery.compile(sql, { sql: 'SELECT id, qty FROM t WHERE qty > 70' }, { policy, key: 'u#1' }); // compares the mask: nothing
    const agg = WatchQuery.compile(sql, { sql: 'SELECT cat, sum(qty) AS s FROM t GROUP BY cat' }, { policy, key: 'u#1' });
    expect((await snapshotOf(rows)).rows).toEqual([{ id: 1, cat: 'open', qty: -1 }]);
    expect((await snapshotOf(masked)).rows).toEqual([]);
    expect((await snapshotOf(agg)).rows).toEqual([{ cat: 'open', s: -1 }]);
    const from = store.lastLsn;
    await store.put('main.t', { id: 1, cat: 'open', price: 2, qty: 73 }); // stored qty changed: the masked row did not
    await store.put('main.t', { id: 3, cat: 'open', price: 3, qty: 74 });
    await store.put('main.t', { id: 3, cat: 'secret', price: 3, qty: 75 }); // leaves the subscriber's sight
    await store.put('main.t', { id: 2, cat: 'open', price: 3, qty: 76 }); // comes into it
    const all = [...(await changesSince(rows, from)), ...(await changesSince(masked, from)), ...(await changesSince(agg, from))];
    expect(JSON.stringify(all)).not.toMatch(/secret|7[1-6]/);
    expect((await changesSince(rows, from)).map((c) => [c.op, c.key[0], c.old ?? null, c.new ?? null])).toEqual([
      ['insert', 3, null, { id: 3, cat: 'open', qty: -1 }],
      ['delete', 3, { id: 3, cat: 'open', qty: -1 }, null],
      ['insert', 2, null, { id: 2, cat: 'open', qty: -1 }],
    ]);
    // the owner's engine policy is not the subscriber's: its own subscription sees stored values
    expect((await snapshotOf(WatchQuery.compile(sql, { sql: 'SELECT id, cat, qty FROM t WHERE price > 0' }))).rows.map((r) => r.qty)).toEqual([73, 76, 75]);
  });

  it('an aggregate resumes from an earlier position: groups rewound through the log, then every result row the missed frames changed', async () => {
    const text = 'SELECT cat, count(*) AS n, sum(qty) AS s, min(price) AS lo, max(qty) AS hi FROM t WHERE qty >= 0 GROUP BY cat HAVING count(*) > 1';
    const keyOf = (r: Record<string, unknown>) => JSON.stringify([r.cat]);
    await fc.assert(
      fc.asyncProperty(fc.array(write, { minLength: 1, maxLength: 14 }), async (writes) => {
        // the client's last event: the result at `from`
        const held = new Map((await snapshotOf(WatchQuery.compile(sql, { sql: text }))).rows.map((r) => [keyOf(r), r]));
        const from = store.lastLsn;
        for (const w of writes) {
          if (w.del) await store.delete('main.t', [w.id]);
          else await store.put('main.t', { id: w.id, cat: w.cat, price: w.price, qty: w.qty });
        }
        // a new subscription resuming at `from`: groups from a snapshot now, rewound to `from`
        const q = WatchQuery.compile(sql, { sql: text });
        const now = await snapshotOf(q);
        const feed = store.changesFrom({ epoch: store.epoch, lsn: from }, { batchFrames: 3 });
        try {
          while (now.lsn > from) {
            const b = await feed.next();
            q.rewind(b!.entries.map((e) => e.frame), b!.cursor.lsn >= now.lsn);
            if (b!.cursor.lsn >= now.lsn) break;
          }
        } finally {
          feed.close();
        }
        applyTo(held, await changesSince(q, from)); // each update's old is what the client held
        expect(held).toEqual(new Map(now.rows.map((r) => [keyOf(r), r])));
      }),
      { numRuns: 25 },
    );
  });

  it('follows a point lookup (plan get) as the one key it names', async () => {
    const g = WatchQuery.compile(sql, { plan: { op: 'get', schema: 'main.t', key: [{ kind: 'lit', value: 3 }] } });
    const from = store.lastLsn;
    await store.put('main.t', { id: 4, cat: 'a', price: 1, qty: 1 });
    await store.put('main.t', { id: 3, cat: 'b', price: 2, qty: 1 });
    const ch = await changesSince(g, from);
    expect(ch.map((c) => [c.op, c.key, c.new?.cat])).toEqual([['insert', [3], 'b']]);
  });
});
