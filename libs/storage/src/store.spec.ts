import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { DbError } from '@mmdb/core';
import { TenantStore } from './store';

const USERS = `
namespace = "shop"
table = "users"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "str"
required = true
[[columns]]
name = "email"
ty = "str"
[[columns]]
name = "age"
ty = "i64"
default = 0
[[indexes]]
name = "by_email"
columns = ["email"]
unique = true
`;

const ORDERS = `
namespace = "shop"
table = "orders"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "user_id"
ty = "str"
[[columns]]
name = "total"
ty = "f64"
[[indexes]]
name = "by_total"
columns = ["total"]
[[foreign_keys]]
name = "owner"
columns = ["user_id"]
references = "shop.users"
`;

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    if (e instanceof DbError) return e.code;
    throw e;
  }
}

describe('TenantStore', () => {
  let dir: string;
  let store: TenantStore;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'store-'));
    store = await TenantStore.open({ dir });
    await store.registerSchema(USERS);
    await store.registerSchema(ORDERS);
  });

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('puts, versions, reads and deletes a row', async () => {
    const r1 = await store.put('shop.users', { id: 'u1', email: 'a@x' });
    expect(r1.results[0]).toMatchObject({ op: 'put', version: 1, created: true });
    const r2 = await store.put('shop.users', { id: 'u1', email: 'b@x' });
    expect(r2.results[0]).toMatchObject({ version: 2, created: false });
    const snap = store.snapshot();
    const row = await snap.getRow('shop.users', ['u1']);
    await snap.release();
    expect(row).toMatchObject({ version: 2, values: { id: 'u1', email: 'b@x', age: 0 } });
    const d = await store.delete('shop.users', ['u1']);
    expect(d.results[0]).toMatchObject({ deleted: true });
    const d2 = await store.delete('shop.users', ['u1']);
    expect(d2.results[0]).toMatchObject({ deleted: false });
  });

  it('applies the If-Match table of spec §3.2 and insert-only writes', async () => {
    expect(await code(store.put('shop.users', { id: 'u1' }, { kind: 'if_match', version: '*' }))).toBe('precondition_failed');
    expect(await code(store.put('shop.users', { id: 'u1' }, { kind: 'if_match', version: 1 }))).toBe('precondition_failed');
    await store.put('shop.users', { id: 'u1' });
    expect(await code(store.put('shop.users', { id: 'u1' }, { kind: 'if_match', version: 1 }))).toBe('ok');
    const e = await store.put('shop.users', { id: 'u1' }, { kind: 'if_match', version: 1 }).catch((x) => x);
    expect(e).toBeInstanceOf(DbError);
    expect(e.code).toBe('write_conflict');
    expect(e.details.current_version).toBe(2);
    expect(await code(store.put('shop.users', { id: 'u1' }, { kind: 'if_match', version: '*' }))).toBe('ok');
    expect(await code(store.put('shop.users', { id: 'u1' }, { kind: 'insert' }))).toBe('conflict');
    expect(await code(store.put('shop.users', { id: 'u2' }, { kind: 'insert' }))).toBe('ok');
  });

  it('checks types, required columns and unknown columns', async () => {
    expect(await code(store.put('shop.users', { id: 'u1', age: 'x' }))).toBe('type_mismatch');
    expect(await code(store.put('shop.users', { id: 'u1', age: 1.5 }))).toBe('type_mismatch');
    expect(await code(store.put('shop.users', { email: 'e' }))).toBe('missing_required');
    expect(await code(store.put('shop.users', { id: 'u1', nope: 1 }))).toBe('validation_failed');
    expect(await code(store.put('shop.nope', { id: 'u1' }))).toBe('schema_not_found');
  });

  it('enforces unique indexes, also within one group of concurrent requests', async () => {
    await store.put('shop.users', { id: 'u1', email: 'same' });
    expect(await code(store.put('shop.users', { id: 'u2', email: 'same' }))).toBe('conflict');
    const results = await Promise.all(['a', 'b', 'c'].map((id) => code(store.put('shop.users', { id, email: 'race' }))));
    expect(results.filter((r) => r === 'ok')).toHaveLength(1);
    expect(results.filter((r) => r === 'conflict')).toHaveLength(2);
    // Updating the holder of a unique value keeps it.
    expect(await code(store.put('shop.users', { id: 'u1', email: 'same', age: 3 }))).toBe('ok');
  });

  it('checks foreign keys on write and restricts deletes of referenced rows', async () => {
    expect(await code(store.put('shop.orders', { id: 1, user_id: 'ghost', total: 1 }))).toBe('fk_violation');
    await store.put('shop.users', { id: 'u1' });
    await store.put('shop.orders', { id: 1, user_id: 'u1', total: 1 });
    expect(await code(store.delete('shop.users', ['u1']))).toBe('fk_violation');
    await store.commit({
      changes: [
        { op: 'delete', schema: 'shop.orders', pk: [1] },
        { op: 'delete', schema: 'shop.users', pk: ['u1'] },
      ],
    });
    const snap = store.snapshot();
    expect(await snap.getRow('shop.users', ['u1'])).toBeUndefined();
    await snap.release();
  });

  it('commits a multi-row batch all or nothing, naming the failing change', async () => {
    const e = await store
      .commit({
        changes: [
          { op: 'put', schema: 'shop.users', row: { id: 'a' } },
          { op: 'put', schema: 'shop.users', row: { id: 'b', age: 'bad' } },
        ],
      })
      .catch((x) => x);
    expect(e.code).toBe('type_mismatch');
    expect(e.details.index).toBe(1);
    const snap = store.snapshot();
    expect(await snap.getRow('shop.users', ['a'])).toBeUndefined();
    await snap.release();
  });

  it('scans by pk and by index in order', async () => {
    for (const [id, total] of [[3, 9.5], [1, -2], [2, 100], [-5, 0]] as const) await store.put('shop.orders', { id, total });
    const snap = store.snapshot();
    const ids: number[] = [];
    for await (const b of snap.scanRows('shop.orders')) ids.push(...b.map((r) => r.pk[0] as number));
    expect(ids).toEqual([-5, 1, 2, 3]);
    const totals: number[] = [];
    for await (const b of snap.scanIndex('shop.orders', 'by_total', { gte: [0], lt: [50] })) totals.push(...b.map((r) => r.values.total as number));
    expect(totals).toEqual([0, 9.5]);
    await snap.release();
  });

  it('replays an Idempotency-Key and refuses it with another fingerprint', async () => {
    const idem = (fingerprint: string) => ({
      key: '01J0000000000000000000000A',
      fingerprint,
      expiresAt: Date.now() + 60_000,
      render: (rs: readonly unknown[]) => ({ status: 200, body: { n: rs.length } }),
    });
    const first = await store.commit({ changes: [{ op: 'put', schema: 'shop.users', row: { id: 'i1' } }], idempotency: idem('f1') });
    expect(first.replayed).toBeUndefined();
    const again = await store.commit({ changes: [{ op: 'put', schema: 'shop.users', row: { id: 'i1' } }], idempotency: idem('f1') });
    expect(again.replayed).toEqual({ status: 200, body: { n: 1 } });
    const snap = store.snapshot();
    expect((await snap.getRow('shop.users', ['i1']))?.version).toBe(1);
    await snap.release();
    expect(await code(store.commit({ changes: [{ op: 'put', schema: 'shop.users', row: { id: 'i1' } }], idempotency: idem('f2') }))).toBe('conflict');
  });

  it('purges expired Idempotency-Key records in a frame, keeping live ones', async () => {
    const idem = (key: string, expiresAt: number) => ({ key, fingerprint: 'f', expiresAt, render: () => ({ status: 200, body: null }) });
    const now = Date.now();
    await store.commit({ changes: [{ op: 'put', schema: 'shop.users', row: { id: 'p1' } }], idempotency: idem('01J0000000000000000000000B', now + 1000) });
    await store.commit({ changes: [{ op: 'put', schema: 'shop.users', row: { id: 'p2' } }], idempotency: idem('01J0000000000000000000000C', now + 60_000) });
    expect(await store.purgeIdempotency(now + 5000)).toBe(1);
    expect(await store.idempotencyRecord('01J0000000000000000000000C')).toBeDefined();
    expect(await store.db.get(Buffer.concat([Buffer.from('K'), Buffer.from([0x30]), Buffer.from('01J0000000000000000000000B'), Buffer.from([0])]))).toBeUndefined();
    const last = [];
    for await (const f of store.frames(store.lastLsn)) last.push(f);
    expect(last[0].changes[0]).toMatchObject({ op: 'custom', participant: 'idempotency', type: 'purge' });
  });

  it('drops a schema with its rows and index entries, and verify finds nothing amiss', async () => {
    await store.put('shop.users', { id: 'u1', email: 'e1' });
    await store.put('shop.orders', { id: 1, user_id: 'u1', total: 3 });
    expect((await store.verify()).ok).toBe(true);
    expect(await code(store.dropSchema('shop.users'))).toBe('validation_failed'); // still referenced
    expect(await store.dropSchema('shop.orders')).toBe(true);
    expect(await store.dropSchema('shop.orders')).toBe(false);
    await store.registerSchema(ORDERS);
    const snap = store.snapshot();
    const rows: unknown[] = [];
    for await (const b of snap.scanRows('shop.orders')) rows.push(...b);
    await snap.release();
    expect(rows).toEqual([]);
    expect((await store.verify()).ok).toBe(true);
  });

  it('keeps everything across a reopen and publishes frames on the change feed', async () => {
    const seen: number[] = [];
    const sub = store.changes.subscribe((f) => seen.push(f.lsn));
    await store.put('shop.users', { id: 'u1' });
    await store.put('shop.users', { id: 'u2' });
    sub.unsubscribe();
    expect(seen).toEqual([store.lastLsn - 1, store.lastLsn]);
    const last = store.lastLsn;
    await store.close();
    store = await TenantStore.open({ dir });
    expect(store.lastLsn).toBe(last);
    expect(store.manifests().map((m) => m.id)).toEqual(['shop.orders', 'shop.users']);
    const snap = store.snapshot();
    expect((await snap.getRow('shop.users', ['u2']))?.version).toBe(1);
    await snap.release();
    const frames = [];
    for await (const f of store.frames(last)) frames.push(f);
    expect(frames[0].changes[0]).toMatchObject({ op: 'put', schema: 'shop.users', pk: ['u2'] });
  });
});

describe('snapshot table versions', () => {
  it('moves a schema\'s tableLsn only when its rows or manifest change, and marks quiet snapshots stable', async () => {
    const { mkdtempSync } = await import('fs');
    const dir = mkdtempSync(join(tmpdir(), 'tv-'));
    const store = await TenantStore.open({ dir });
    await store.registerSchema(USERS);
    await store.registerSchema(ORDERS);
    await store.put('shop.users', { id: 'u1' });
    const a = store.snapshot();
    expect(a.stable).toBe(true);
    expect(a.lsn).toBe(store.lastLsn);
    expect(a.tableLsn('shop.users')).toBe(store.lastLsn);
    const ordersAt = a.tableLsn('shop.orders');
    await store.put('shop.users', { id: 'u2' });
    const b = store.snapshot();
    expect(b.tableLsn('shop.users')).toBeGreaterThan(a.tableLsn('shop.users'));
    expect(b.tableLsn('shop.orders')).toBe(ordersAt);
    // A snapshot taken while a group is being written is not stable.
    const pending = store.put('shop.users', { id: 'u3' });
    let sawUnstable = false;
    while (!sawUnstable) {
      const s = store.snapshot();
      sawUnstable = !s.stable;
      await s.release();
      if (!sawUnstable) await new Promise((r) => setImmediate(r));
    }
    await pending;
    await Promise.all([a.release(), b.release()]);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
});

/** Records the store reads of row keys (R keyspace) made through store.db. */
function spyRowReads(store: TenantStore): { rowReads: string[]; restore: () => void } {
  const db = store.db as unknown as { get: (...a: unknown[]) => unknown; getMany: (...a: unknown[]) => unknown };
  const realGet = db.get;
  const realGetMany = db.getMany;
  const rowReads: string[] = [];
  db.get = function (this: unknown, key: unknown, ...rest: unknown[]) {
    if ((key as Buffer)[0] === 'R'.charCodeAt(0)) rowReads.push('get');
    return realGet.call(db, key, ...rest);
  };
  db.getMany = function (this: unknown, keys: unknown, ...rest: unknown[]) {
    if ((keys as Buffer[]).some((k) => k[0] === 'R'.charCodeAt(0))) rowReads.push('getMany');
    return realGetMany.call(db, keys, ...rest);
  };
  return {
    rowReads,
    restore: () => {
      db.get = realGet;
      db.getMany = realGetMany;
    },
  };
}

describe('getRow read cache', () => {
  it('never serves a row older than the last acknowledged write, also under concurrent writes and drops', async () => {
    const { mkdtempSync } = await import('fs');
    const dir = mkdtempSync(join(tmpdir(), 'rc-'));
    const store = await TenantStore.open({ dir, rowCacheRows: 8 });
    await store.registerSchema(USERS);
    expect(await store.getRow('shop.users', ['u1'])).toBeUndefined(); // caches "absent"
    await store.put('shop.users', { id: 'u1', age: 1 });
    expect((await store.getRow('shop.users', ['u1']))?.values.age).toBe(1);
    // Readers racing writers: every read sees at least the version acknowledged before it started.
    let acked = 1;
    const writer = (async () => {
      for (let i = 2; i <= 60; i++) {
        await store.put('shop.users', { id: 'u1', age: i });
        acked = i;
      }
    })();
    const readers = Array.from({ length: 4 }, async () => {
      for (let i = 0; i < 80; i++) {
        const floor = acked;
        const r = await store.getRow('shop.users', ['u1']);
        expect(r!.values.age as number).toBeGreaterThanOrEqual(floor);
        // More keys than the cache holds, so eviction runs too.
        await store.getRow('shop.users', [`other${i % 12}`]);
      }
    });
    await Promise.all([writer, ...readers]);
    expect((await store.getRow('shop.users', ['u1']))?.values.age).toBe(60);
    await store.delete('shop.users', ['u1']);
    expect(await store.getRow('shop.users', ['u1'])).toBeUndefined();
    await store.put('shop.users', { id: 'u2' });
    expect(await store.getRow('shop.users', ['u2'])).toBeDefined(); // now cached
    await store.dropSchema('shop.users');
    await store.registerSchema(USERS);
    expect(await store.getRow('shop.users', ['u2'])).toBeUndefined();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes committed rows through, so reads and the next commit need no store read', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rc-'));
    const store = await TenantStore.open({ dir, sync: false });
    await store.registerSchema(USERS);
    await store.commit({ changes: Array.from({ length: 20 }, (_, i) => ({ op: 'put' as const, schema: 'shop.users', row: { id: `u${i}`, email: `u${i}@x`, age: i } })) });
    const { rowReads, restore } = spyRowReads(store);
    try {
      // Reads of rows just written come from the cache, with the committed version.
      const r = await store.getRow('shop.users', ['u7']);
      expect(r).toMatchObject({ version: 1, values: { id: 'u7', email: 'u7@x', age: 7 } });
      // Concurrent updates of cached rows form groups whose current versions come from the cache.
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => store.commit({ changes: [{ op: 'put', schema: 'shop.users', row: { id: `u${i}`, email: `u${i}@x`, age: 100 + i }, precondition: { kind: 'if_match', version: 1 } }] })),
      );
      expect(results.map((x) => (x.results[0] as { version: number }).version)).toEqual(Array(20).fill(2));
      expect(rowReads).toEqual([]);
      const j = await store.getRowJson('shop.users', ['u3']);
      expect(j).toEqual({ version: 2, lsn: expect.any(Number), json: JSON.stringify({ id: 'u3', email: 'u3@x', age: 103 }) });
      expect(JSON.parse(j!.json)).toEqual((await store.getRow('shop.users', ['u3']))!.values);
      // A failed commit leaves the cached row as it was.
      await expect(store.commit({ changes: [{ op: 'put', schema: 'shop.users', row: { id: 'u3', age: 1 }, precondition: { kind: 'if_match', version: 1 } }] })).rejects.toThrow(DbError);
      expect((await store.getRow('shop.users', ['u3']))!.values.age).toBe(103);
      await store.delete('shop.users', ['u4']);
      expect(await store.getRow('shop.users', ['u4'])).toBeUndefined();
      expect(await store.getRowJson('shop.users', ['u4'])).toBeUndefined();
      expect(rowReads).toEqual([]);
    } finally {
      restore();
    }
    // After a restart the cache is empty and the store answers the same.
    await store.close();
    const again = await TenantStore.open({ dir, sync: false });
    expect(await again.getRowJson('shop.users', ['u3'])).toEqual({ version: 2, lsn: expect.any(Number), json: JSON.stringify({ id: 'u3', email: 'u3@x', age: 103 }) });
    expect(await again.getRow('shop.users', ['u4'])).toBeUndefined();
    await again.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a bulk group updates the rows already cached but does not add its other rows', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rc-'));
    const store = await TenantStore.open({ dir, sync: false, rowCacheRows: 64 }); // bulk: over 4 key writes
    await store.registerSchema(USERS);
    await store.put('shop.users', { id: 'hot', age: 1 }); // small group: written through
    const bulk = (age: number) =>
      store.commit({ changes: Array.from({ length: 10 }, (_, i) => ({ op: 'put' as const, schema: 'shop.users', row: { id: i ? `b${i}` : 'hot', age } })) });
    await bulk(2);
    const { rowReads, restore } = spyRowReads(store);
    try {
      expect((await store.getRow('shop.users', ['hot']))!.values.age).toBe(2); // updated in place
      expect(rowReads).toEqual([]);
      expect((await store.getRow('shop.users', ['b3']))!.values.age).toBe(2); // not cached by the bulk group
      expect(rowReads).toEqual(['get']);
      await bulk(3); // reads the uncached rows' versions (one getMany)
      rowReads.length = 0;
      expect((await store.getRow('shop.users', ['hot']))!.values.age).toBe(3);
      expect((await store.getRow('shop.users', ['b3']))!.values.age).toBe(3); // cached by the read, updated by the group
      expect(rowReads).toEqual([]);
    } finally {
      restore();
    }
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a row with non-ASCII text and nested JSON splits into the same values as a parse', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rc-'));
    const store = await TenantStore.open({ dir, sync: false, rowCacheRows: 0 });
    await store.registerSchema(USERS);
    await store.put('shop.users', { id: 'ü,1', email: 'a,"b"]@x', age: -3 });
    const j = await store.getRowJson('shop.users', ['ü,1']);
    expect(JSON.parse(j!.json)).toEqual({ id: 'ü,1', email: 'a,"b"]@x', age: -3 });
    expect(j!.version).toBe(1);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('frame text', () => {
  it('the frames a commit writes re-encode to the same bytes (values serialized once, exactly as JSON.stringify)', async () => {
    const { encodeFrame, decodeFrame } = await import('./frame');
    const { LOG_START, LOG_END } = await import('./records');
    const dir = mkdtempSync(join(tmpdir(), 'ft-'));
    const store = await TenantStore.open({ dir, sync: false });
    await store.registerSchema(USERS);
    await store.commit({
      changes: [
        { op: 'put', schema: 'shop.users', row: { id: 'ü "q" \\ \u2028', email: 'a@x', age: -5 } },
        { op: 'put', schema: 'shop.users', row: { id: 'big', age: 9007199254740991 } },
        { op: 'put', schema: 'shop.users', row: { id: 'none', email: null } },
      ],
    });
    await store.put('shop.users', { id: 'big', age: 0 });
    // updates log the values they replace (from the record's text): escapes, non-ASCII, a bigint
    await store.put('shop.users', { id: 'ü "q" \\ \u2028', email: 'b@x', age: 1 });
    await store.put('shop.users', { id: 'big', age: 9223372036854775807n as unknown as number });
    await store.put('shop.users', { id: 'big', age: 2 });
    await store.delete('shop.users', ['none']);
    let n = 0;
    for await (const [, bytes] of store.db.iterator({ gte: LOG_START, lt: LOG_END })) {
      expect(encodeFrame(decodeFrame(bytes))).toEqual(bytes);
      n++;
    }
    expect(n).toBeGreaterThanOrEqual(7);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('LevelDB memtable size', () => {
  it('writeBufferBytes decides when writes are flushed to table files', async () => {
    const { readdirSync } = await import('fs');
    const tables = async (writeBufferBytes: number | undefined) => {
      const dir = mkdtempSync(join(tmpdir(), 'wb-'));
      const store = await TenantStore.open({ dir, sync: false, writeBufferBytes });
      await store.registerSchema(USERS);
      const pad = 'x'.repeat(200);
      for (let b = 0; b < 20; b++) {
        await store.commit({ changes: Array.from({ length: 500 }, (_, i) => ({ op: 'put' as const, schema: 'shop.users', row: { id: `${b}-${i}-${pad}` } })) });
      }
      await new Promise((r) => setTimeout(r, 200)); // let a flush finish
      const n = readdirSync(dir).filter((f) => f.endsWith('.ldb')).length;
      await store.close();
      rmSync(dir, { recursive: true, force: true });
      return n;
    };
    // About 10 MB of rows and frames: over a 1 MiB memtable many times, under the 16 MiB default.
    expect(await tables(1024 * 1024)).toBeGreaterThan(0);
    expect(await tables(undefined)).toBe(0);
  }, 60_000); // ~10 MB written twice: seconds on a loaded 2-core host
});

describe('snapshot rawGetMany', () => {
  it('reads several keys in one call, as of the snapshot, in the keys order', async () => {
    const { rowKey } = await import('./records');
    const dir = mkdtempSync(join(tmpdir(), 'rgm-'));
    const store = await TenantStore.open({ dir, sync: false });
    await store.registerSchema(USERS);
    await store.put('shop.users', { id: 'a', age: 1 });
    await store.put('shop.users', { id: 'b', age: 2 });
    const snap = store.snapshot();
    await store.put('shop.users', { id: 'a', age: 10 });
    await store.delete('shop.users', ['b']);
    const keys = [rowKey('shop.users', ['b']), rowKey('shop.users', ['zz']), rowKey('shop.users', ['a'])];
    const got = await snap.rawGetMany(keys);
    expect(got.map((v) => (v ? JSON.parse(v.toString())[2].age : undefined))).toEqual([2, undefined, 1]);
    expect(await snap.rawGetMany([])).toEqual([]);
    for (let i = 0; i < keys.length; i++) expect(await snap.rawGet(keys[i])).toEqual(got[i]);
    await snap.release();
    await expect(snap.rawGetMany(keys)).rejects.toThrow();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
