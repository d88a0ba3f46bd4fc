import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { KV_TOML as T } from '../test/kv-schema';
import { TenantStore } from './store';

/** A sha256 fingerprint (as the HTTP layer writes) with a digit run a number scan may take for a literal. */
const FP = 'aec59f019e6ce8ea0b6631dfea9221fa8f509d0433612291038065110eb67937';

describe('catalogue and migration changes (frame v2)', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'catalog-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes catalogue entries in frames, reads them back, also from a closed store directory', async () => {
    const store = await TenantStore.open({ dir });
    const r = await store.commit({
      changes: [
        { op: 'catalog', kind: 'token', id: 'A', record: { hash: 'h1', created: 1 } },
        { op: 'catalog', kind: 'token', id: 'B', record: { hash: 'h2', created: 2 } },
        { op: 'catalog', kind: 'user', id: 'alice', record: { roles: ['reader'] } },
      ],
      actor: 'operator',
      route: 'POST tokens',
    });
    expect(r.results).toEqual([
      { op: 'catalog', kind: 'token', id: 'A', existed: false },
      { op: 'catalog', kind: 'token', id: 'B', existed: false },
      { op: 'catalog', kind: 'user', id: 'alice', existed: false },
    ]);
    const del = await store.commit({ changes: [{ op: 'catalog', kind: 'token', id: 'A', record: null }] });
    expect(del.results[0]).toMatchObject({ existed: true });
    expect(await store.catalogEntries('token')).toEqual([{ id: 'B', record: { hash: 'h2', created: 2 } }]);
    await expect(store.commit({ changes: [{ op: 'catalog', kind: 'nope' as never, id: 'x', record: 1 }] })).rejects.toMatchObject({ code: 'validation_failed' });
    await expect(store.commit({ changes: [{ op: 'catalog', kind: 'token', id: '', record: 1 }] })).rejects.toMatchObject({ code: 'validation_failed' });
    const frames = [];
    for await (const f of store.frames()) frames.push(f);
    expect(frames.map((f) => f.version)).toEqual([2, 2]);
    expect(frames[0].meta).toEqual({ actor: 'operator', route: 'POST tokens' });
    expect(frames[1].meta).toBeUndefined();
    await store.close();
    expect(await TenantStore.readCatalog(dir, 'token')).toEqual([{ id: 'B', record: { hash: 'h2', created: 2 } }]);
    expect(await TenantStore.readCatalog(dir, 'user')).toEqual([{ id: 'alice', record: { roles: ['reader'] } }]);
  });

  it('records a migration step in the frame of the rows it writes, and the idempotency record in the annotations', async () => {
    const store = await TenantStore.open({ dir });
    await store.registerSchema(T);
    await store.commit({
      changes: [
        { op: 'put', schema: 't.kv', row: { k: 1 } },
        { op: 'put', schema: 't.kv', row: { k: 2 } },
        { op: 'migration', migration: 'm1', step: 'backfill', cursor: [2], state: { copied: 2 } },
      ],
      idempotency: { key: 'k1', fingerprint: FP, expiresAt: 4_000_000_000_000, render: () => ({ status: 200, body: {} }) },
    });
    expect(await store.migrationStep('m1')).toEqual({ op: 'migration', migration: 'm1', step: 'backfill', cursor: [2], state: { copied: 2 }, lsn: 2 });
    await expect(store.commit({ changes: [{ op: 'migration', migration: 'm1', step: 'sideways' as never }] })).rejects.toMatchObject({ code: 'validation_failed' });
    let last;
    for await (const f of store.frames(2)) last = f;
    expect(last!.changes.map((c) => c.op)).toEqual(['put', 'put', 'migration']);
    expect(last!.meta).toEqual({ idempotency: { key: 'k1', fingerprint: FP, expires_at: 4_000_000_000_000 } });
    await store.close();
    // the frame (its hex fingerprint looks like digits to a number scan) decodes at the next open
    const again = await TenantStore.open({ dir });
    expect(again.recovery.corrupt).toEqual([]);
    expect(again.recovery.framesVerified).toBe(2);
    await again.close();
  });
});
