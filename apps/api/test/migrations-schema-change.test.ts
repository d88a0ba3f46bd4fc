/**
 * Schema changes run as online migrations (apps/api README "Migrations"), over real HTTPS:
 * `POST /schemas` with a changed manifest of a registered schema (even one that rewrites no
 * row) and `ALTER TABLE` through `/sql` each leave a migration object and its audit entries,
 * cut over by themselves and answer once complete; derived state (a unique index) follows the
 * changed manifest.
 */
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('schema changes as migrations over real HTTPS', () => {
  let srv: TestServer;
  const req = (method: string, p: string, body?: unknown) => srv.request(method, `${T}${p}`, { token: TOKEN, ...(body !== undefined ? { body } : {}) });
  const putSchema = (toml: string) => srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: toml, contentType: 'text/plain' });
  const sql = (text: string) => req('POST', '/sql', { sql: text });
  const migrations = async () => (await req('GET', '/migrations?limit=1000')).json.migrations as Array<Record<string, any>>;

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('POST /schemas with a changed manifest runs as a migration even without a row rewrite; the same manifest again is no migration', async () => {
    const toml = 'namespace = "app"\ntable = "tags"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "tag"\nty = "str"\n';
    const first = await putSchema(toml);
    expect([first.status, first.json.created, first.json.migration]).toEqual([200, true, undefined]);
    expect((await req('POST', '/rows/app.tags/_batch', [{ id: 1, tag: 'a' }, { id: 2, tag: 'b' }])).status).toBe(200);
    // A unique index: built in place (no row copied) by the backfill and the dual writes; the cutover frame registers the manifest.
    const indexed = `${toml}[[indexes]]\nname = "by_tag"\ncolumns = ["tag"]\nunique = true\n`;
    const r = await putSchema(indexed);
    expect([r.status, r.json.created, typeof r.json.migration]).toEqual([200, false, 'string']);
    const m = (await req('GET', `/migrations/${r.json.migration}`)).json;
    expect(m).toMatchObject({ schema: 'app.tags', state: 'Completed', plan: 'in_place', auto_cutover: true, cutover: { rows: 0, reshaped: 0 } });
    const audit = (await req('GET', `/migrations/_audit?migration=${m.id}`)).json.entries.map((e: any) => e.action);
    expect(audit).toEqual(['submit', 'start', 'ready', 'auto-cutover']);
    // The derived state followed the manifest: the unique index refuses a duplicate.
    const dup = await req('PUT', '/rows/app.tags/3', { id: 3, tag: 'a' });
    expect([dup.status, dup.json.error]).toEqual([409, 'conflict']);
    // The same manifest again: nothing changes, no migration.
    const before = (await migrations()).length;
    const again = await putSchema(indexed);
    expect([again.status, again.json.migration]).toEqual([200, undefined]);
    expect((await migrations()).length).toBe(before);
    // With an Idempotency-Key: a replay answers what the migration answered, and starts none.
    const keyed = `${indexed}[[indexes]]\nname = "by_tag_id"\ncolumns = ["tag", "id"]\n`;
    const post = () => srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: keyed, contentType: 'text/plain', headers: { 'idempotency-key': '01J0000000000000000000ABCD' } });
    const once = await post();
    expect([once.status, typeof once.json.migration]).toEqual([200, 'string']);
    const replayed = await post();
    expect([replayed.status, replayed.json, replayed.headers['x-db-idempotent-replay']]).toEqual([200, once.json, 'true']);
    expect((await migrations()).length).toBe(before + 1);
  }, 60_000);

  it('ALTER TABLE ADD / RENAME / DROP COLUMN through /sql run as auto-cutover migrations and answer when complete', async () => {
    expect((await sql('CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT, stars INTEGER)')).status).toBe(200);
    expect((await sql("INSERT INTO notes VALUES (1, 'x', 3), (2, 'y', 4), (3, 'z', 5)")).status).toBe(200);
    const count = (await migrations()).length;

    const add = await sql("ALTER TABLE notes ADD COLUMN lang TEXT DEFAULT 'en'");
    expect(add.status).toBe(200);
    const ren = await sql('ALTER TABLE notes RENAME COLUMN body TO text');
    expect(ren.status).toBe(200);
    // Answered once complete: the very next statement sees the new shape.
    expect((await sql('SELECT id, text, lang FROM notes ORDER BY id')).json.rows).toEqual([{ id: 1, text: 'x', lang: 'en' }, { id: 2, text: 'y', lang: 'en' }, { id: 3, text: 'z', lang: 'en' }]);
    const drop = await sql('ALTER TABLE notes DROP COLUMN stars');
    expect(drop.status).toBe(200);
    const sel = await sql('SELECT * FROM notes WHERE id = 2');
    expect(Object.keys(sel.json.rows[0]).sort()).toEqual(['id', 'lang', 'text']);
    const bad = await sql('SELECT stars FROM notes');
    expect(bad.status).toBe(400);

    const ms = (await migrations()).slice(0, 3);
    expect(ms.length + count).toBe((await migrations()).length);
    expect(ms.map((m) => [m.state, m.auto_cutover, m.plan])).toEqual([
      ['Completed', true, 'rewrite'],
      ['Completed', true, 'rewrite'],
      // ADD COLUMN … DEFAULT: every existing row takes the default (SQL's meaning), so the rows are copied.
      ['Completed', true, 'rewrite'],
    ]);
    expect(ms[1].steps.join(' ')).toMatch(/rename/);
    // A rename keeps the values under the new name; the cutover took every row from the dual-written shadow.
    expect(ms[1].cutover).toMatchObject({ rows: 3, reshaped: 0 });
    for (const m of ms) {
      const actions = (await req('GET', `/migrations/_audit?migration=${m.id}`)).json.entries.map((e: any) => e.action);
      expect(actions[0]).toBe('submit');
      expect(actions[actions.length - 1]).toBe('auto-cutover');
    }

    // A table without a declared primary key (hidden _rowid): its rows keep their rowids.
    expect((await sql("CREATE TABLE tags(label TEXT); INSERT INTO tags VALUES ('a'), ('b')")).status).toBe(200);
    expect((await sql('ALTER TABLE tags RENAME COLUMN label TO name')).status).toBe(200);
    expect((await sql("INSERT INTO tags VALUES ('c')")).status).toBe(200);
    expect((await sql('SELECT rowid AS r, name FROM tags ORDER BY rowid')).json.rows).toEqual([{ r: 1, name: 'a' }, { r: 2, name: 'b' }, { r: 3, name: 'c' }]);

    const missing = await sql('ALTER TABLE notes RENAME COLUMN nope TO other');
    expect([missing.status, missing.json.error]).toEqual([400, 'validation_failed']);
    const clash = await sql('ALTER TABLE notes RENAME COLUMN text TO lang');
    expect(clash.status).toBe(400);
    expect((await migrations()).length).toBe(count + 4);
  }, 90_000);
  it('CREATE [UNIQUE] INDEX, DROP INDEX and CREATE INDEX … USING hnsw through /sql run as migrations; a unique index over duplicates fails naming them and leaves nothing behind', async () => {
    expect((await sql('CREATE TABLE people(id INTEGER PRIMARY KEY, nick TEXT, city TEXT, emb VECTOR(2))')).status).toBe(200);
    expect((await sql("INSERT INTO people VALUES (1, 'ann', 'oslo', '[1,0]'), (2, 'bob', 'rome', '[0,1]'), (3, 'ann', 'oslo', '[1,1]'), (4, 'cy', 'lima', NULL)")).status).toBe(200);
    const count = (await migrations()).length;
    const schemas = async () => (await req('GET', '/schemas')).json as string[];

    // Duplicates: 409 conflict as before, now naming the migration and the offending row keys.
    const dup = await sql('CREATE UNIQUE INDEX people_nick ON people(nick)');
    expect([dup.status, dup.json.error]).toEqual([409, 'conflict']);
    expect(dup.json.message).toMatch(/unique index "people_nick" on main\.people already has \(nick\) = \["ann"\]/);
    expect(dup.json.offending_keys).toEqual([[3]]);
    const failed = (await migrations())[0];
    expect([failed.id, failed.state, failed.offending_keys]).toEqual([dup.json.migration, 'Failed', [[3]]]);
    // Nothing left behind: no index (a duplicate still goes in), and the shadow table is dropped.
    expect((await sql("INSERT INTO people VALUES (5, 'bob', 'oslo', NULL)")).status).toBe(200);
    for (const end = Date.now() + 10_000; (await schemas()).some((x) => x.includes('__mig_')) && Date.now() < end; ) await sleep(20);
    expect((await schemas()).filter((x) => x.includes('people'))).toEqual(['main.people']);

    // Without duplicates the index is built in place and the cutover registers it.
    for (const id of [3, 5]) expect((await req('DELETE', `/rows/main.people/${id}`)).status).toBe(200);
    const ok = await sql('CREATE UNIQUE INDEX people_nick ON people(nick)');
    expect([ok.status, ok.json.kind, ok.json.created]).toEqual([200, 'ddl', true]);
    const built = (await migrations())[0];
    expect(built).toMatchObject({ state: 'Completed', plan: 'in_place', operations: [{ op: 'add_index', name: 'people_nick', columns: ['nick'], unique: true }], cutover: { rows: 0 } });
    const again = await sql("INSERT INTO people VALUES (6, 'ann', 'rome', NULL)");
    expect([again.status, again.json.error]).toEqual([409, 'conflict']);
    expect((await sql('CREATE INDEX people_city ON people(city)')).status).toBe(200);
    expect((await sql("SELECT id FROM people WHERE city = 'oslo'")).json.rows).toEqual([{ id: 1 }]);
    expect((await sql('DROP INDEX people_city')).status).toBe(200);
    expect((await sql('CREATE INDEX people_city ON people(city)')).status).toBe(200);
    // pgvector's index: the [vector] section, whose entries the shadow builds from the rows already stored.
    expect((await sql('CREATE INDEX ON people USING hnsw (emb vector_l2_ops)')).status).toBe(200);
    const top = await req('POST', '/vector/main.people/topk', { vector: [0, 1], k: 1 });
    expect([top.status, top.json[0]?.id]).toEqual([200, '2']);

    const ms = (await migrations()).slice(0, 6);
    expect(ms.length + count).toBe((await migrations()).length);
    expect(ms.map((m) => [m.state, m.auto_cutover, m.operations[0].op])).toEqual([
      ['Completed', true, 'add_vector'],
      ['Completed', true, 'add_index'],
      ['Completed', true, 'drop_index'],
      ['Completed', true, 'add_index'],
      ['Completed', true, 'add_index'],
      ['Failed', true, 'add_index'],
    ]);
    for (const m of ms) {
      const actions = (await req('GET', `/migrations/_audit?migration=${m.id}`)).json.entries.map((e: any) => [e.action, e.actor]);
      expect(actions[0][0]).toBe('submit');
      expect(actions[actions.length - 1][0]).toBe(m.state === 'Failed' ? 'failure' : 'auto-cutover');
    }
    // On a table with a full-text section too (the SQL manifest editor refused those before).
    const docs = 'namespace = "app"\ntable = "articles"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "body"\nty = "str"\n[[columns]]\nname = "lang"\nty = "str"\n[[fulltext]]\nfield = "body"\n';
    expect((await putSchema(docs)).status).toBe(200);
    expect((await req('POST', '/rows/app.articles/_batch', [{ id: 1, body: 'waves of shock', lang: 'en' }, { id: 2, body: 'calm water', lang: 'en' }])).status).toBe(200);
    expect((await sql('CREATE INDEX articles_lang ON app.articles(lang)')).status).toBe(200);
    expect((await sql("ALTER TABLE app.articles ADD COLUMN stars INTEGER DEFAULT 0")).status).toBe(200);
    expect(((await req('GET', '/fts/app.articles/body?q=shock')).json as Array<{ doc_id: string }>).map((h) => h.doc_id)).toEqual(['1']);
    expect((await sql('SELECT id, stars FROM app.articles WHERE lang = \'en\' ORDER BY id')).json.rows).toEqual([{ id: 1, stars: 0 }, { id: 2, stars: 0 }]);
  }, 90_000);
  it('postings follow a changed manifest: a new full-text field indexes the stored rows, a new analyzer re-indexes them', async () => {
    const base = 'namespace = "app"\ntable = "docs"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "body"\nty = "str"\n';
    expect((await putSchema(base)).status).toBe(200);
    expect((await req('POST', '/rows/app.docs/_batch', [{ id: 1, body: 'the runners were running' }, { id: 2, body: 'a quiet walk' }])).status).toBe(200);
    const search = async (q: string) => ((await req('GET', `/fts/app.docs/body?q=${encodeURIComponent(q)}`)).json as Array<{ doc_id: string }>).map((h) => h.doc_id);
    const standard = await putSchema(`${base}[[fulltext]]\nfield = "body"\nanalyzer = "standard"\n`);
    expect([standard.status, typeof standard.json.migration]).toEqual([200, 'string']);
    expect(await search('runners')).toEqual(['1']);
    expect(await search('run')).toEqual([]);
    const english = await putSchema(`${base}[[fulltext]]\nfield = "body"\nanalyzer = "english"\n`);
    expect([english.status, typeof english.json.migration]).toEqual([200, 'string']);
    // Stemmed now: "run" finds the row written before the change.
    expect(await search('run')).toEqual(['1']);
    expect(await search('walking')).toEqual(['2']);
  }, 60_000);
});
