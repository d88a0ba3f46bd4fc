/**
 * Dual writes on a real classic-level store: while a rewrite migration is open, every put and
 * delete of its table writes the row's new shape into the shadow in the same frame; the
 * backfill copies through the same mirror inside its commit; the cutover takes the shadow's
 * rows as they are (none reshaped again); a write the new shape refuses commits without its
 * mirror and fails the migration with its key.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import type { JsonValue, Row } from '@mmdb/core';
import { KEYSPACE, prefixRange, TenantStore } from '@mmdb/storage';
import { Migrations } from './index';

const ITEMS = `namespace = "app"
table = "items"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "name"
ty = "str"
[[columns]]
name = "qty"
ty = "i64"
[[indexes]]
name = "by_name"
columns = ["name"]
`;

/** `using` of this test: `qty * 10` (the app wires the SQL engine's evaluator; apps/api tests run real SQL). */
const evaluate = (expr: string, row: Row): JsonValue => {
  if (expr !== 'qty * 10') throw new Error(`unexpected expression ${expr}`);
  return row.qty === null || row.qty === undefined ? null : String(Number(row.qty) * 10);
};
const OPS = [
  { op: 'rename_column', from: 'name', to: 'title' },
  { op: 'change_type', column: 'qty', ty: 'str', using: 'qty * 10' },
] as const;
const until = async (f: () => boolean, ms = 30_000) => {
  const end = Date.now() + ms;
  while (!f() && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
};

describe('dual writes', () => {
  let dir: string;
  let store: TenantStore;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'migrations-dual-'));
    store = await TenantStore.open({ dir, sync: false });
    await store.registerSchema(ITEMS);
    await store.commit({ changes: Array.from({ length: 400 }, (_, i) => ({ op: 'put' as const, schema: 'app.items', row: { id: i, name: `n${i}`, qty: i } })) });
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('every write made during the backfill is in the new shape after cutover, in the frame of its source write', async () => {
    const m = new Migrations(store, { evaluate });
    await m.attach();
    const r = await m.submit({ schema: 'app.items', operations: [...OPS], throttle: { batch_size: 8, max_rows_per_s: 2_000 } }, 'tok');
    // The model of the table: what every write left, to compare with after cutover.
    const model = new Map<number, { name: string; qty: number } | null>();
    for (let i = 0; i < 400; i++) model.set(i, { name: `n${i}`, qty: i });
    let stop = false;
    let writes = 0;
    const writer = async (w: number) => {
      let n = 0;
      while (!stop) {
        const id = (n * 7 + w * 131) % 500; // updates, inserts past 400, and deletes
        n++;
        if (n % 5 === 0) {
          await store.delete('app.items', [id]);
          model.set(id, null);
        } else {
          const row = { id, name: `w${w}-${n}`, qty: n };
          await store.commit({ changes: [{ op: 'put', schema: 'app.items', row }] });
          model.set(id, { name: row.name, qty: row.qty });
        }
        writes++;
      }
    };
    const writers = [writer(0), writer(1), writer(2)];
    await until(() => m.get(r.id).state === 'ReadyToCutover' && writes > 300);
    // Writes keep going after the backfill's end too (ReadyToCutover is still dual-written).
    const more = writes + 50;
    await until(() => writes > more);
    stop = true;
    await Promise.all(writers);
    expect(m.get(r.id).state).toBe('ReadyToCutover');
    const shadow = store.manifests().find((x) => x.id !== 'app.items')!.id;
    // Before the cutover the shadow holds exactly the source's rows in the new shape.
    for (const [id, v] of model) {
      const got = (await store.getRow(shadow, [id]))?.values ?? null;
      expect([id, got]).toEqual([id, v === null ? null : { id, title: v.name, qty: String(v.qty * 10) }]);
    }
    // Every frame that wrote a source row while the mirror was on also wrote its shadow row.
    let sourceWrites = 0;
    for await (const f of store.frames()) {
      const rowsOf = (schema: string) => f.changes.flatMap((c) => ((c.op === 'put' || c.op === 'delete') && c.schema === schema ? [{ op: c.op, pk: JSON.stringify(c.pk) }] : []));
      const src = rowsOf('app.items');
      if (!src.length || f.changes.some((c) => c.op === 'schema_put')) continue;
      const mirrored = rowsOf(shadow);
      if (f.lsn > 2) {
        sourceWrites++;
        // A put's new shape; a delete's too, unless the shadow had no copy yet (nothing to delete).
        for (const c of src) {
          const twin = mirrored.find((x) => x.op === c.op && x.pk === c.pk);
          if (c.op === 'put') expect(twin).toBeDefined();
        }
        expect(mirrored.every((x) => src.some((c) => c.op === x.op && c.pk === x.pk))).toBe(true);
      }
    }
    expect(sourceWrites).toBeGreaterThan(300);
    const versionOf = async (id: number) => (await store.getRow('app.items', [id]))?.version;
    const kept = [0, 1, 2, 3, 399].map((id) => [id, model.get(id) ? 'row' : 'none']);
    const versions = await Promise.all(kept.map(([id]) => versionOf(id as number)));
    const lsnBefore = store.lastLsn;
    const done = await m.request(r.id, 'cutover', { actor: 'tok' });
    expect(done.state).toBe('Completed');
    // The cutover switched the table onto the shadow's keys in one frame: no row was rewritten,
    // none was missed by the dual writes, and every row kept its version.
    expect(done.cutover).toMatchObject({ switched: true, reshaped: 0 });
    expect(done.cutover!.from_shadow).toBe(done.cutover!.rows);
    expect(await Promise.all(kept.map(([id]) => versionOf(id as number)))).toEqual(versions);
    const frames: number[] = [];
    for await (const f of store.frames()) if (f.lsn > lsnBefore && f.changes.some((c) => c.op === 'migration' && c.step === 'cutover')) frames.push(f.changes.length);
    expect(frames.length).toBe(1);
    expect(frames[0]).toBeLessThan(5);
    for (const [id, v] of model) {
      const got = (await store.getRow('app.items', [id]))?.values ?? null;
      expect([id, got]).toEqual([id, v === null ? null : { id, title: v.name, qty: String(v.qty * 10) }]);
    }
    await until(() => m.get(r.id).cleaned);
    await m.close();
    expect((await store.verify()).differences).toEqual([]);
    // After cutover the table is written in the new shape only, with no mirror.
    await store.put('app.items', { id: 1000, title: 't', qty: '5' });
    expect(store.manifests().map((x) => x.id)).toEqual(['app.items']);
    expect(store.manifest('app.items')!.physical).toMatch(/^app\.items__mig_/);
    // The old shape's keys are cleared in the background.
    const oldKeys = async () => (await store.db.keys({ ...prefixRange(KEYSPACE.row, ['app.items']) }).all()).length + (await store.db.keys({ ...prefixRange(KEYSPACE.index, ['app.items']) }).all()).length;
    const end = Date.now() + 20_000;
    while ((await oldKeys()) > 0 && Date.now() < end) await new Promise((res) => setTimeout(res, 20));
    expect(await oldKeys()).toBe(0);
    // A reopened store finds the table on its new keys.
    await store.close();
    store = await TenantStore.open({ dir, sync: false });
    expect((await store.getRow('app.items', [1000]))?.values).toEqual({ id: 1000, title: 't', qty: '5' });
    const snap = store.snapshot();
    let n = 0;
    for await (const rows of snap.scanIndex('app.items', 'by_name', { prefix: ['t'] })) n += rows.length;
    await snap.release();
    expect(n).toBe(1);
    expect((await store.verify()).differences).toEqual([]);
  }, 120_000);

  it('keeps dual-writing after a restart, and a write the new shape refuses commits alone and fails the migration', async () => {
    let m = new Migrations(store, { evaluate });
    await m.attach();
    const r = await m.submit({ schema: 'app.items', operations: [{ op: 'rename_column', from: 'name', to: 'title' }, { op: 'add_check', name: 'short', expr: 'length(title) < 10' }], throttle: { batch_size: 4, max_rows_per_s: 50 } }, 'tok');
    await until(() => m.get(r.id).state === 'Backfilling');
    await m.close();
    await store.close();
    store = await TenantStore.open({ dir, sync: false });
    // The check is evaluated by a stand-in for the SQL engine's check evaluator.
    store.setCheckEvaluator((expr, row) => (expr === 'length(title) < 10' ? String(row.title ?? '').length < 10 : null));
    m = new Migrations(store, { evaluate });
    await m.attach();
    const shadow = store.manifests().find((x) => x.id !== 'app.items')!.id;
    await store.put('app.items', { id: 399, name: 'late', qty: 1 });
    expect((await store.getRow(shadow, [399]))?.values).toEqual({ id: 399, title: 'late', qty: 1 });
    // Valid in the old shape, refused by the new one: the write commits, its mirror does not.
    await store.put('app.items', { id: 398, name: 'a much too long name', qty: 1 });
    expect((await store.getRow('app.items', [398]))?.values).toEqual({ id: 398, name: 'a much too long name', qty: 1 });
    await until(() => m.get(r.id).state === 'Failed');
    expect(m.get(r.id)).toMatchObject({ state: 'Failed', offending_keys: [[398]] });
    expect(m.get(r.id).reason).toMatch(/^check_violation/);
    await until(() => m.get(r.id).cleaned);
    await m.close();
    // The shadow's keys are cleared in the background after its drop frame.
    const left = async () => (await store.db.keys({ ...prefixRange(KEYSPACE.row, [shadow]) }).all()).length + (await store.db.keys({ ...prefixRange(KEYSPACE.index, [shadow]) }).all()).length;
    const end = Date.now() + 20_000;
    while ((await left()) > 0 && Date.now() < end) await new Promise((res) => setTimeout(res, 20));
    expect(await left()).toBe(0);
    expect(await store.db.keys({ ...prefixRange(KEYSPACE.meta, ['retiring']) }).all()).toEqual([]);
    // The mirror is gone with the migration: writes are single again.
    await store.put('app.items', { id: 397, name: 'a much too long name', qty: 1 });
    expect(store.manifests().map((x) => x.id)).toEqual(['app.items']);
    expect((await store.verify()).differences).toEqual([]);
  }, 120_000);
  it('repairs, before the fence, writes made while no mirror was installed (a new lease holder that had not loaded the migration)', async () => {
    const m = new Migrations(store, { evaluate });
    await m.attach();
    const r = await m.submit({ schema: 'app.items', operations: [...OPS] }, 'tok');
    await until(() => m.get(r.id).state === 'ReadyToCutover');
    store.setRowMirror('app.items', undefined);
    await store.put('app.items', { id: 5, name: 'changed', qty: 7 }); // its copy is now stale
    await store.put('app.items', { id: 900, name: 'fresh', qty: 9 }); // no copy
    await store.delete('app.items', [6]); // a copy left over
    m.runner.mirror(m.get(r.id));
    const done = await m.request(r.id, 'cutover', { actor: 'tok' });
    expect(done.cutover).toMatchObject({ switched: true, rows: 400, reshaped: 3, from_shadow: 397 });
    expect((await store.getRow('app.items', [5]))?.values).toEqual({ id: 5, title: 'changed', qty: '70' });
    expect((await store.getRow('app.items', [900]))?.values).toEqual({ id: 900, title: 'fresh', qty: '90' });
    expect(await store.getRow('app.items', [6])).toBeUndefined();
    expect((await store.getRow('app.items', [7]))?.values).toEqual({ id: 7, title: 'n7', qty: '70' });
    // A primary-key column's type never changes (its rows would be other rows).
    await expect(m.submit({ schema: 'app.items', operations: [{ op: 'change_type', column: 'id', ty: 'str' }] }, 'tok')).rejects.toMatchObject({ code: 'validation_failed' });
    await until(() => m.get(r.id).cleaned);
    await m.close();
    expect((await store.verify()).differences).toEqual([]);
  }, 60_000);
});
