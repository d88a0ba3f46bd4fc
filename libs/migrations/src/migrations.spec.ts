/**
 * The state machine (every legal move and the 409s of spec 3.1), operations → target manifest
 * and plan, and a migration run on a real classic-level store: the backfill frames carry the
 * cursor, the cutover is one frame, abort and failure report what they should.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { TenantStore } from '@mmdb/storage';
import { applyOperations, planManifest, MIGRATION_STATES, move, Migrations, type MigrationState, type Operation } from './index';
import { parseManifest } from '@mmdb/storage';
import { derivedChanges, shadowToml } from './ops';
import { onFollower, USERS } from './testing/fixtures';


describe('migration states', () => {
  it('allows exactly the moves of the diagram; anything else is 409 conflict', () => {
    const legal: Record<string, MigrationState[]> = {
      start: ['Pending'], pause: ['Pending', 'Backfilling'], resume: ['Paused'], ready: ['Backfilling'],
      cutover: ['ReadyToCutover'], 'auto-cutover': ['ReadyToCutover'],
      abort: ['Pending', 'Backfilling', 'Paused', 'ReadyToCutover'], failure: ['Pending', 'Backfilling', 'Paused', 'ReadyToCutover'],
    };
    for (const [trigger, from] of Object.entries(legal)) {
      for (const s of MIGRATION_STATES) {
        if (from.includes(s)) expect(() => move('m', s, trigger as never)).not.toThrow();
        else expect(() => move('m', s, trigger as never)).toThrow(expect.objectContaining({ code: 'conflict' }));
      }
    }
    expect(move('m', 'ReadyToCutover', 'cutover')).toBe('Completed');
    expect(move('m', 'Backfilling', 'abort')).toBe('Aborted');
    expect(() => move('m', 'Completed', 'abort')).toThrow(/already cut over/);
  });
});

describe('operations', () => {
  it('plans renames, type changes and new checks as rewrites, indexes and defaults as not', () => {
    const r = applyOperations(USERS, [{ op: 'rename_column', from: 'email', to: 'mail' }, { op: 'change_type', column: 'age', ty: 'str', using: 'CAST(age AS TEXT)' }]);
    expect(r.plan.rewrite).toBe(true);
    expect(r.manifest.columns.map((c) => c.name)).toEqual(['id', 'mail', 'age']);
    expect(r.manifest.indexes[0].columns).toEqual(['mail']);
    expect(r.plan.mapping).toEqual({ from: { id: 'id', mail: 'email' }, using: { age: 'CAST(age AS TEXT)' } });
    const n = applyOperations(USERS, [{ op: 'add_column', name: 'nick', ty: 'str' }, { op: 'set_default', column: 'age', value: 0 }, { op: 'drop_required', column: 'email' }]);
    expect(n.plan.rewrite).toBe(false);
    // Indexes alone are built in place during the backfill (never in the cutover frame): no row is copied.
    const ops: Operation[] = [{ op: 'add_index', name: 'by_age', columns: ['age'] }, { op: 'drop_index', name: 'by_email' }];
    const deltas = ops.map((op) => applyOperations(USERS, [op]).plan);
    expect(deltas.map((x) => [x.rewrite, x.inPlace])).toEqual([[false, { added: ['by_age'], dropped: [] }], [false, { added: [], dropped: ['by_email'] }]]);
    // An index redefined under its own name, or an index change beside a row rewrite, is copied into a shadow.
    const redefined = applyOperations(USERS, [{ op: 'drop_index', name: 'by_email' }, { op: 'add_index', name: 'by_email', columns: ['age'] }]).plan;
    expect([redefined.rewrite, redefined.inPlace, redefined.steps.join(' ')]).toEqual([true, undefined, expect.stringMatching(/shadow/)]);
    expect(applyOperations(USERS, [{ op: 'add_index', name: 'by_age', columns: ['age'] }, { op: 'rename_column', from: 'email', to: 'mail' }]).plan.inPlace).toBeUndefined();
    expect(() => applyOperations(USERS, [{ op: 'drop_column', name: 'id' }])).toThrow(expect.objectContaining({ code: 'validation_failed' }));
    expect(() => applyOperations(USERS, [{ op: 'drop_index', name: 'nope' }])).toThrow(/no index "nope"/);
    expect(() => applyOperations(USERS, [])).toThrow(/non-empty/);
    expect(planManifest(parseManifest(USERS), parseManifest(USERS.replace('name = "age"\nty = "i64"', 'name = "age"\nty = "f64"'))).rewrite).toBe(true);
  });

  it('copies into a shadow whenever a derived entry changes, and builds the shadow with every derived section', () => {
    const docs = `${USERS}[[fulltext]]\nfield = "email"\nanalyzer = "standard"\n[[relations]]\nname = "knows"\ntarget = "app.users"\ncolumns = ["age"]\n`;
    const plan = (toml: string) => planManifest(parseManifest(docs), parseManifest(toml)).rewrite;
    expect(plan(docs)).toBe(false);
    expect(plan(docs.replace('analyzer = "standard"', 'analyzer = "english"'))).toBe(true); // postings change
    expect(plan(docs.replace('analyzer = "standard"', 'analyzer = "standard"\nk1 = 1.5'))).toBe(false); // scoring only
    expect(plan(docs.replace('columns = ["age"]', 'columns = ["id"]'))).toBe(true); // edges change
    expect(plan(`${docs}[[columns]]\nname = "nick"\nty = "str"\n`)).toBe(false);
    expect(plan(`${docs}[[columns]]\nname = "nick"\nty = "str"\ndefault = "x"\n`)).toBe(true); // every row takes the default
    const described = `description = "people"\n${docs}`;
    expect(parseManifest(described).description).toBe('people');
    const shadow = parseManifest(shadowToml(described, 'users__mig_1'));
    expect([shadow.id, shadow.description, shadow.fulltext.map((f) => f.analyzer), shadow.relations.map((r) => [r.source, r.target])]).toEqual([
      'app.users__mig_1', undefined, ['standard'], [['app.users__mig_1', 'app.users__mig_1']],
    ]);
    expect(derivedChanges(shadow, parseManifest(docs))).toBe(false);
  });

  it('builds added or dropped indexes, full-text fields and relations in place; anything redefined or a vector goes through a shadow', () => {
    const docs = `${USERS}[[fulltext]]\nfield = "email"\nanalyzer = "standard"\n[[relations]]\nname = "knows"\ntarget = "app.users"\ncolumns = ["age"]\n`;
    const plan = (toml: string) => planManifest(parseManifest(docs), parseManifest(toml));
    const noFts = docs.replace('[[fulltext]]\nfield = "email"\nanalyzer = "standard"\n', '');
    expect(plan(noFts).inPlace).toEqual({ added: [], dropped: [], fields_added: [], fields_dropped: ['email'] });
    expect(planManifest(parseManifest(noFts), parseManifest(docs)).inPlace).toEqual({ added: [], dropped: [], fields_added: ['email'], fields_dropped: [] });
    const more = `${docs}[[relations]]\nname = "likes"\ntarget = "app.users"\ncolumns = ["age"]\n`;
    expect(plan(more).inPlace).toEqual({ added: [], dropped: [], relations_added: ['likes'], relations_dropped: [] });
    expect(plan(more).rewrite).toBe(false);
    // Redefined under the same name (keys would mix), or a vector section: a shadow.
    for (const t of [docs.replace('analyzer = "standard"', 'analyzer = "english"'), docs.replace('columns = ["age"]', 'columns = ["id"]')]) {
      expect([plan(t).rewrite, plan(t).inPlace]).toEqual([true, undefined]);
    }
    const vec = `${USERS}[[columns]]\nname = "v"\nty = "vector"\ndim = 2\n`;
    const withVector = `${vec}[vector]\ncolumn = "v"\ndim = 2\nmetric = "l2"\n`;
    expect(planManifest(parseManifest(vec), parseManifest(withVector)).rewrite).toBe(true);
  });
});

describe('a migration on a real store', () => {
  let dir: string;
  let store: TenantStore;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'migrations-spec-'));
    store = await TenantStore.open({ dir, sync: false });
    await store.registerSchema(USERS);
    for (let i = 0; i < 50; i++) await store.put('app.users', { id: i, email: `u${i}@x`, age: i });
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('backfills in frames with the cursor, cuts over in one frame, cleans up; the log holds every step', async () => {
    const m = new Migrations(store);
    await m.attach();
    const r = await m.submit({ schema: 'app.users', operations: [{ op: 'rename_column', from: 'email', to: 'mail' }], throttle: { batch_size: 16, max_rows_per_s: 100_000 } }, 'tok1');
    expect(r.state).toBe('Pending');
    const end = Date.now() + 20_000;
    while (m.get(r.id).state !== 'ReadyToCutover' && Date.now() < end) await new Promise((res) => setTimeout(res, 10));
    expect(m.get(r.id).progress.done).toBe(50);
    const done = await m.request(r.id, 'cutover', { actor: 'tok1' });
    expect(done.state).toBe('Completed');
    expect((await store.getRow('app.users', [3]))?.values).toEqual({ id: 3, mail: 'u3@x', age: 3 });
    await m.waitFor(r.id);
    while (!m.get(r.id).cleaned && Date.now() < end) await new Promise((res) => setTimeout(res, 10));
    await m.close();
    const steps: string[] = [];
    const cursors: unknown[] = [];
    for await (const f of store.frames()) {
      for (const c of f.changes) {
        if (c.op !== 'migration') continue;
        steps.push(c.step);
        if (c.step === 'backfill') cursors.push(c.cursor);
      }
    }
    expect(steps[0]).toBe('submit');
    expect(steps.slice(-2)).toEqual(['cutover', 'cleanup']);
    // The batch adapts, the cursor only moves forward and ends at the last key.
    const flat = cursors.map((c) => (c as number[])[0]);
    expect(flat[0]).toBe(15);
    expect(flat).toEqual([...flat].sort((x, y) => x - y));
    expect(flat[flat.length - 1]).toBe(49);
    expect((await store.verify()).differences).toEqual([]);
    expect(store.manifests().map((x) => x.id)).toEqual(['app.users']);
    // A follower applying the same frames through the applier ends in the same state.
    await onFollower(store, async (follower) => {
      expect(follower.schemaToml('app.users')).toBe(store.schemaToml('app.users'));
      expect(follower.manifests().map((x) => x.id)).toEqual(['app.users']);
      for (const k of [0, 3, 49]) expect((await follower.getRow('app.users', [k]))?.values).toEqual((await store.getRow('app.users', [k]))?.values);
      expect((await follower.migrationStep(r.id))?.step).toBe('cleanup');
      expect((await follower.catalogEntries('migration_audit')).length).toBe((await store.catalogEntries('migration_audit')).length);
      expect((await follower.verify()).differences).toEqual([]);
    });
  });

  it('an internal submit naming a registered reshaper copies every row through it, dual writes included', async () => {
    const m = new Migrations(store, { reshapers: { upper: (row, target) => ({ ...row, email: `${String(row.email).toUpperCase()}@${target.table}` }) } });
    await m.attach();
    // The same manifest: nothing for the plan to do but the reshaper's row rewrite.
    await expect(m.submit({ schema: 'app.users', manifest: USERS }, 'tok', undefined, { reshape: 'nope' })).rejects.toMatchObject({ code: 'internal_error' });
    const r = await m.submit({ schema: 'app.users', manifest: USERS, throttle: { batch_size: 5, max_rows_per_s: 500 } }, 'tok', undefined, { reshape: 'upper' });
    expect([r.plan, r.steps.join(' ')]).toEqual(['rewrite', expect.stringMatching(/reshaped by "upper"/)]);
    await store.put('app.users', { id: 7, email: 'late', age: 7 });
    const end = Date.now() + 20_000;
    while (m.get(r.id).state !== 'ReadyToCutover' && Date.now() < end) await new Promise((res) => setTimeout(res, 10));
    // After the backfill, only the dual write can reshape it.
    await store.put('app.users', { id: 8, email: 'after', age: 8 });
    await m.request(r.id, 'cutover', { actor: 'tok' });
    expect((await store.getRow('app.users', [8]))?.values).toEqual({ id: 8, email: 'AFTER@users', age: 8 });
    expect((await store.getRow('app.users', [3]))?.values).toEqual({ id: 3, email: 'U3@X@users', age: 3 });
    expect((await store.getRow('app.users', [7]))?.values).toEqual({ id: 7, email: 'LATE@users', age: 7 });
    await m.close();
  });

  it('fails with the offending keys when rows break a new required column, and aborts leave the table as it was', async () => {
    await store.put('app.users', { id: 60, age: 1 });
    await store.put('app.users', { id: 61, age: 2 });
    const m = new Migrations(store);
    await m.attach();
    const bad = await m.submit({ schema: 'app.users', operations: [{ op: 'set_required', column: 'email' }, { op: 'rename_column', from: 'age', to: 'years' }] }, 'tok1');
    await m.waitFor(bad.id).then(() => undefined, () => undefined);
    const end = Date.now() + 20_000;
    while (m.get(bad.id).state !== 'ReadyToCutover' && m.get(bad.id).state !== 'Failed' && Date.now() < end) await new Promise((res) => setTimeout(res, 10));
    // Rows 60 and 61 have no email: the new shape refuses them, and says which.
    expect(m.get(bad.id).state).toBe('Failed');
    expect(m.get(bad.id).offending_keys).toEqual([[60], [61]]);
    expect(m.get(bad.id).reason).toMatch(/^missing_required/);
    const a = await m.submit({ schema: 'app.users', operations: [{ op: 'drop_column', name: 'age' }], throttle: { batch_size: 1, max_rows_per_s: 1 } }, 'tok2');
    expect((await m.request(a.id, 'abort', { actor: 'tok2' })).state).toBe('Aborted');
    await expect(m.request(a.id, 'cutover', { actor: 'tok2' })).rejects.toMatchObject({ code: 'conflict' });
    await expect(m.request('nope', 'abort', { actor: 'tok2' })).rejects.toMatchObject({ code: 'not_found' });
    while (!m.get(a.id).cleaned && Date.now() < end) await new Promise((res) => setTimeout(res, 10));
    await m.close();
    expect((await store.getRow('app.users', [3]))?.values).toEqual({ id: 3, email: 'u3@x', age: 3 });
    expect(store.manifests().map((x) => x.id)).toEqual(['app.users']);
    const audit = (await m.audit()).items.map((e) => `${e.action}:${e.actor}`);
    expect(audit.slice(0, 4)).toEqual(['submit:tok1', 'start:system', 'failure:system', 'submit:tok2']);
    // The second one may or may not have started before the abort.
    expect(audit.slice(4).join()).toMatch(/^(start:system,)?abort:tok2$/);
  });
});
