import { bootstrapEnv, ITEMS_TOML, OPERATOR, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;

const VENDORS_TOML = `namespace = "shop"
table = "vendors"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "str"
required = true
`;

const LINES_TOML = `namespace = "shop"
table = "lines"
primary_key = ["order_id", "line"]
[[columns]]
name = "order_id"
ty = "str"
required = true
[[columns]]
name = "line"
ty = "i64"
required = true
[[columns]]
name = "vendor"
ty = "str"
[[columns]]
name = "qty"
ty = "i64"
[[foreign_keys]]
name = "vendor"
columns = ["vendor"]
references = "shop.vendors"
`;

describe('schemas and rows over real HTTPS (spec §4.2, §4.3, §3.2, §7)', () => {
  let srv: TestServer;
  const req = (m: string, p: string, o: Parameters<TestServer['request']>[2] = {}) => srv.request(m, T + p, { token: TOKEN, ...o });
  const ulid = (n: number) => '01J0000000000000000000' + String(n).padStart(4, '0');

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
  });
  afterAll(async () => {
    await srv.stop();
  });

  describe('schemas', () => {
    it('registers TOML, lists, returns it verbatim, and updates', async () => {
      const r = await req('POST', '/schemas', { raw: ITEMS_TOML, contentType: 'text/plain' });
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({ id: 'shop.items', tenant: TENANT });
      expect((await req('POST', '/schemas', { raw: VENDORS_TOML, contentType: 'text/plain' })).status).toBe(200);
      expect((await req('POST', '/schemas', { raw: LINES_TOML, contentType: 'text/plain' })).status).toBe(200);
      const list = await req('GET', '/schemas');
      expect(list.json).toEqual(['shop.items', 'shop.lines', 'shop.vendors']);
      const g = await req('GET', '/schemas/shop.items');
      expect(g.status).toBe(200);
      expect(g.headers['content-type']).toMatch(/^text\/plain/);
      expect(g.text).toBe(ITEMS_TOML);
      const again = await req('POST', '/schemas', { raw: ITEMS_TOML, contentType: 'text/plain' });
      expect(again.json.created).toBe(false);
    });

    it('a bad manifest is 400 naming the key; JSON instead of TOML is invalid_body', async () => {
      const bad = await req('POST', '/schemas', { raw: ITEMS_TOML.replace('ty = "f64"', 'ty = "money"'), contentType: 'text/plain' });
      expect(bad.status).toBe(400);
      expect(bad.json.error).toBe('validation_failed');
      expect(bad.json.message).toMatch(/ty/);
      const notToml = await req('POST', '/schemas', { raw: 'this is = = not toml', contentType: 'text/plain' });
      expect(notToml.status).toBe(400);
      const json = await req('POST', '/schemas', { body: { namespace: 'a' } });
      expect(json.status).toBe(400);
      expect(json.json.error).toBe('invalid_body');
    });

    it('GET/DELETE of an absent schema is 404', async () => {
      for (const m of ['GET', 'DELETE']) {
        const r = await req(m, '/schemas/shop.nothing');
        expect(r.status).toBe(404);
        expect(r.json.error).toBe('schema_not_found');
      }
    });
  });

  describe('rows', () => {
    it('POST upserts and answers {schema, pk, version, created} with an ETag', async () => {
      const a = await req('POST', '/rows/shop.items', { body: { id: 1, name: 'apple', price: 1.5 } });
      expect(a.status).toBe(200);
      expect(a.json).toEqual({ schema: 'shop.items', pk: '1', version: 1, created: true });
      expect(a.headers.etag).toBe('"1"');
      const b = await req('POST', '/rows/shop.items', { body: { id: 1, name: 'apple', price: 2 } });
      expect(b.json).toEqual({ schema: 'shop.items', pk: '1', version: 2, created: false });
      const c = await req('POST', '/rows/shop.items?expect=insert', { body: { id: 1, name: 'apple2' } });
      expect(c.status).toBe(409);
      expect(c.json.error).toBe('conflict');
      const d = await req('POST', '/rows/shop.items?expect=insert', { body: { id: 2, name: 'pear' } });
      expect(d.json).toMatchObject({ version: 1, created: true });
    });

    it('GET returns the row with its version as ETag; absent → 404 row_not_found', async () => {
      const g = await req('GET', '/rows/shop.items/1');
      expect(g.status).toBe(200);
      expect(g.json).toEqual({ id: 1, name: 'apple', price: 2 });
      expect(g.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(g.headers.etag).toBe('"2"');
      const n = await req('GET', '/rows/shop.items/999');
      expect(n.status).toBe(404);
      expect(n.json.error).toBe('row_not_found');
      const bad = await req('GET', '/rows/shop.items/abc');
      expect(bad.status).toBe(400);
      expect(bad.json.error).toBe('validation_failed');
    });

    it('PUT follows every row of the §3.2 table', async () => {
      // row at V, no If-Match: upsert, new version in ETag
      let r = await req('PUT', '/rows/shop.items/1', { body: { name: 'apple', price: 3 } });
      expect(r.status).toBe(200);
      expect(r.headers.etag).toBe('"3"');
      expect(r.json.version).toBe(3);
      // If-Match equal to V: bare number, quoted entity-tag, weak tag
      r = await req('PUT', '/rows/shop.items/1', { body: { name: 'apple', price: 4 }, headers: { 'if-match': '3' } });
      expect(r.headers.etag).toBe('"4"');
      r = await req('PUT', '/rows/shop.items/1', { body: { name: 'apple', price: 5 }, headers: { 'if-match': '"4"' } });
      expect(r.headers.etag).toBe('"5"');
      r = await req('PUT', '/rows/shop.items/1', { body: { name: 'apple', price: 6 }, headers: { 'if-match': 'W/"5"' } });
      expect(r.headers.etag).toBe('"6"');
      // If-Match naming another version: 409 write_conflict with current_version
      r = await req('PUT', '/rows/shop.items/1', { body: { name: 'apple' }, headers: { 'if-match': '"2"' } });
      expect(r.status).toBe(409);
      expect(r.json).toMatchObject({ error: 'write_conflict', current_version: 6 });
      // row absent, any If-Match including *: 412
      for (const im of ['1', '"1"', '*']) {
        r = await req('PUT', '/rows/shop.items/77', { body: { name: 'ghost' }, headers: { 'if-match': im } });
        expect(r.status).toBe(412);
        expect(r.json.error).toBe('precondition_failed');
      }
      // row at any version, If-Match: *: written
      r = await req('PUT', '/rows/shop.items/1', { body: { name: 'apple', price: 7 }, headers: { 'if-match': '*' } });
      expect(r.status).toBe(200);
      expect(r.headers.etag).toBe('"7"');
      // malformed If-Match
      r = await req('PUT', '/rows/shop.items/1', { body: { name: 'apple' }, headers: { 'if-match': 'seven' } });
      expect(r.status).toBe(400);
      // a body key that disagrees with the path
      r = await req('PUT', '/rows/shop.items/1', { body: { id: 2, name: 'x' } });
      expect(r.status).toBe(400);
      expect(r.json.message).toMatch(/id/);
      expect((await req('GET', '/rows/shop.items/1')).json).toEqual({ id: 1, name: 'apple', price: 7 });
    });

    it('DELETE is idempotent {deleted}', async () => {
      await req('POST', '/rows/shop.items', { body: { id: 50, name: 'gone' } });
      expect((await req('DELETE', '/rows/shop.items/50')).json).toEqual({ deleted: true });
      const again = await req('DELETE', '/rows/shop.items/50');
      expect(again.status).toBe(200);
      expect(again.json).toEqual({ deleted: false });
      expect((await req('GET', '/rows/shop.items/50')).status).toBe(404);
      expect((await req('DELETE', '/rows/shop.items/x')).status).toBe(400);
    });

    it('refuses bad rows with the catalogue codes', async () => {
      const cases: Array<[unknown, number, string, RegExp]> = [
        [{ id: 3, name: 42 }, 400, 'type_mismatch', /name/],
        [{ id: 3.5, name: 'x' }, 400, 'type_mismatch', /id/],
        [{ id: 3 }, 400, 'missing_required', /name/],
        [{ id: 3, name: 'x', colour: 'red' }, 400, 'validation_failed', /colour/],
        [{ id: 3, name: 'apple' }, 409, 'conflict', /by_name|unique|apple/],
        [[1, 2], 400, 'validation_failed', /object/],
      ];
      for (const [body, status, code, msg] of cases) {
        const r = await req('POST', '/rows/shop.items', { body });
        expect([r.status, r.json.error]).toEqual([status, code]);
        expect(r.json.message).toMatch(msg);
        expect(r.json.retry).toBe(false);
      }
      const fk = await req('POST', '/rows/shop.lines', { body: { order_id: 'o1', line: 1, vendor: 'nobody' } });
      expect(fk.status).toBe(400);
      expect(fk.json.error).toBe('fk_violation');
      const unknown = await req('POST', '/rows/shop.nothing', { body: { id: 1 } });
      expect(unknown.status).toBe(404);
      expect(unknown.json.error).toBe('schema_not_found');
    });

    it('refuses bodies that do not parse or do not match their Content-Type, and bodies over 8 MiB', async () => {
      const broken = await req('POST', '/rows/shop.items', { raw: '{"id": 1,', contentType: 'application/json' });
      expect(broken.status).toBe(400);
      expect(broken.json.error).toBe('invalid_body');
      const xml = await req('POST', '/rows/shop.items', { raw: '<row/>', contentType: 'application/xml' });
      expect(xml.status).toBe(400);
      expect(xml.json.error).toBe('invalid_body');
      const text = await req('POST', '/rows/shop.items', { raw: 'id=1', contentType: 'text/plain' });
      expect(text.status).toBe(400);
      const big = await req('POST', '/rows/shop.items', { raw: JSON.stringify({ id: 9, name: 'x'.repeat(9 * 1024 * 1024) }) });
      expect(big.status).toBe(413);
      expect(big.json.error).toBe('payload_too_large');
    });

    it('composite keys in the path: comma-joined components or a JSON array', async () => {
      await req('POST', '/rows/shop.vendors', { body: { id: 'acme' } });
      const a = await req('POST', '/rows/shop.lines', { body: { order_id: 'o,1', line: 2, vendor: 'acme', qty: 5 } });
      expect(a.status).toBe(200);
      expect(a.json.pk).toBe('o%2C1,2');
      expect((await req('GET', '/rows/shop.lines/o%2C1,2')).json).toEqual({ order_id: 'o,1', line: 2, vendor: 'acme', qty: 5 });
      expect((await req('GET', '/rows/shop.lines/' + encodeURIComponent('["o,1",2]'))).json.qty).toBe(5);
      expect((await req('GET', '/rows/shop.lines/o%2C1')).status).toBe(400);
      // deleting a referenced vendor is refused (restrict)
      const del = await req('DELETE', '/rows/shop.vendors/acme');
      expect(del.status).toBe(400);
      expect(del.json.error).toBe('fk_violation');
    });
  });

  describe('_batch', () => {
    it('a JSON array commits all or nothing; a bad row is named by its index', async () => {
      const ok = await req('POST', '/rows/shop.items/_batch', { body: [{ id: 100, name: 'b100' }, { id: 101, name: 'b101' }] });
      expect(ok.status).toBe(200);
      expect(ok.json).toMatchObject({ schema: 'shop.items', count: 2, created: 2 });
      expect(ok.json.results).toEqual([
        { pk: '100', version: 1, created: true },
        { pk: '101', version: 1, created: true },
      ]);
      const bad = await req('POST', '/rows/shop.items/_batch', { body: [{ id: 102, name: 'b102' }, { id: 103, name: 'b103' }, { id: 'x', name: 'b' }] });
      expect(bad.status).toBe(400);
      expect(bad.json).toMatchObject({ error: 'type_mismatch', index: 2, field: 'id' });
      expect((await req('GET', '/rows/shop.items/102')).status).toBe(404);
      const notArray = await req('POST', '/rows/shop.items/_batch', { body: { id: 1 } });
      expect(notArray.status).toBe(400);
    });

    it('NDJSON commits chunk by chunk; a bad line in the middle names the line and drops its chunk', async () => {
      const lines = [];
      for (let i = 0; i < 10; i++) lines.push(JSON.stringify({ id: 200 + i, name: `n${200 + i}` }));
      lines[6] = '{"id": 206, "name": 12}'; // line 7 fails its type check
      const r = await req('POST', '/rows/shop.items/_batch?chunk=3', { raw: lines.join('\n') + '\n', contentType: 'application/x-ndjson' });
      expect(r.status).toBe(400);
      expect(r.json).toMatchObject({ error: 'type_mismatch', line: 7, committed: 6, chunk_discarded: { first_line: 7, last_line: 9 } });
      for (let i = 0; i < 10; i++) expect((await req('GET', `/rows/shop.items/${200 + i}`)).status).toBe(i < 6 ? 200 : 404);

      const parse = await req('POST', '/rows/shop.items/_batch?chunk=2', { raw: '{"id":300,"name":"a"}\n{"id":301,"name":"b"}\n{"id":302,\n{"id":303,"name":"d"}\n', contentType: 'application/x-ndjson' });
      expect(parse.status).toBe(400);
      expect(parse.json).toMatchObject({ error: 'invalid_body', line: 3, committed: 2 });
      expect((await req('GET', '/rows/shop.items/303')).status).toBe(404);

      const good = await req('POST', '/rows/shop.items/_batch', { raw: '{"id":400,"name":"a400"}\r\n\n{"id":401,"name":"a401"}', contentType: 'application/x-ndjson' });
      expect(good.status).toBe(200);
      expect(good.json).toEqual({ schema: 'shop.items', committed: 2, chunks: 1 });

      for (const chunk of ['0', '10001', 'x']) {
        expect((await req('POST', `/rows/shop.items/_batch?chunk=${chunk}`, { raw: '{"id":1}\n', contentType: 'application/x-ndjson' })).status).toBe(400);
      }
    });

    it('NDJSON is not held to the 8 MiB cap, but refuses an oversized line', async () => {
      const rows = [];
      for (let i = 0; i < 10; i++) rows.push(JSON.stringify({ id: 10_000 + i, name: `big${i}-` + 'p'.repeat(950_000) }));
      const body = rows.join('\n');
      expect(body.length).toBeGreaterThan(8 * 1024 * 1024);
      const r = await req('POST', '/rows/shop.items/_batch?chunk=4', { raw: body, contentType: 'application/x-ndjson' });
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ schema: 'shop.items', committed: 10, chunks: 3 });
      expect((await req('GET', '/rows/shop.items/10009')).json.name).toHaveLength(950_000 + 5);
      const long = await req('POST', '/rows/shop.items/_batch', {
        raw: `{"id":500,"name":"a"}\n{"id":501,"name":"${'x'.repeat(2 * 1024 * 1024)}"}\n`,
        contentType: 'application/x-ndjson',
      });
      expect(long.status).toBe(413);
      expect(long.json).toMatchObject({ error: 'payload_too_large', line: 2 });
    });
  });

  describe('Idempotency-Key', () => {
    it('replays the stored answer for the same body and refuses another body', async () => {
      const k = ulid(1);
      const a = await req('POST', '/rows/shop.items', { body: { id: 600, name: 'k600' }, headers: { 'idempotency-key': k } });
      expect(a.status).toBe(200);
      const b = await req('POST', '/rows/shop.items', { body: { id: 600, name: 'k600' }, headers: { 'idempotency-key': k } });
      expect(b.status).toBe(200);
      expect(b.json).toEqual(a.json);
      expect(b.headers.etag).toBe(a.headers.etag);
      expect(b.headers['x-db-idempotent-replay']).toBe('true');
      expect((await req('GET', '/rows/shop.items/600')).headers.etag).toBe('"1"'); // written once
      const c = await req('POST', '/rows/shop.items', { body: { id: 600, name: 'other' }, headers: { 'idempotency-key': k } });
      expect(c.status).toBe(409);
      expect(c.json.error).toBe('conflict');
      const uuid = await req('PUT', '/rows/shop.items/600', { body: { name: 'k600b' }, headers: { 'idempotency-key': '3b241101-e2bb-4255-8caf-4136c566a962' } });
      expect(uuid.json.version).toBe(2);
      const uuid2 = await req('PUT', '/rows/shop.items/600', { body: { name: 'k600b' }, headers: { 'idempotency-key': '3b241101-e2bb-4255-8caf-4136c566a962' } });
      expect(uuid2.json.version).toBe(2);
      const bad = await req('POST', '/rows/shop.items', { body: { id: 601, name: 'x' }, headers: { 'idempotency-key': 'not-a-key' } });
      expect(bad.status).toBe(400);
      expect(bad.json.error).toBe('validation_failed');
    });

    it('works on DELETE, _batch, NDJSON and schemas', async () => {
      const del1 = await req('DELETE', '/rows/shop.items/600', { headers: { 'idempotency-key': ulid(2) } });
      const del2 = await req('DELETE', '/rows/shop.items/600', { headers: { 'idempotency-key': ulid(2) } });
      expect([del1.json, del2.json]).toEqual([{ deleted: true }, { deleted: true }]);
      const bodies = [{ id: 700, name: 'k700' }];
      const b1 = await req('POST', '/rows/shop.items/_batch', { body: bodies, headers: { 'idempotency-key': ulid(3) } });
      const b2 = await req('POST', '/rows/shop.items/_batch', { body: bodies, headers: { 'idempotency-key': ulid(3) } });
      expect(b2.json).toEqual(b1.json);
      const nd = '{"id":701,"name":"k701"}\n{"id":702,"name":"k702"}\n';
      const n1 = await req('POST', '/rows/shop.items/_batch?chunk=1', { raw: nd, contentType: 'application/x-ndjson', headers: { 'idempotency-key': ulid(4) } });
      const n2 = await req('POST', '/rows/shop.items/_batch?chunk=1', { raw: nd, contentType: 'application/x-ndjson', headers: { 'idempotency-key': ulid(4) } });
      expect(n1.json).toEqual({ schema: 'shop.items', committed: 2, chunks: 2 });
      expect(n2.json).toEqual(n1.json);
      expect(n2.headers['x-db-idempotent-replay']).toBe('true');
      expect((await req('GET', '/rows/shop.items/702')).headers.etag).toBe('"1"');
      const n3 = await req('POST', '/rows/shop.items/_batch?chunk=1', { raw: nd + '\n{"id":703,"name":"z"}', contentType: 'application/x-ndjson', headers: { 'idempotency-key': ulid(4) } });
      expect(n3.status).toBe(409);
      expect((await req('GET', '/rows/shop.items/703')).status).toBe(404);
      const s1 = await req('POST', '/schemas', { raw: VENDORS_TOML, contentType: 'text/plain', headers: { 'idempotency-key': ulid(5) } });
      const s2 = await req('POST', '/schemas', { raw: VENDORS_TOML, contentType: 'text/plain', headers: { 'idempotency-key': ulid(5) } });
      expect(s2.json).toEqual(s1.json);
    });
  });

  describe('dropping schemas', () => {
    it('DELETE one schema removes its rows; delete-all is operator-only', async () => {
      expect((await req('GET', '/rows/shop.items/1')).status).toBe(200);
      const d = await req('DELETE', '/schemas/shop.items');
      expect(d.status).toBe(204);
      expect(d.text).toBe('');
      expect((await req('GET', '/rows/shop.items/1')).json.error).toBe('schema_not_found');
      await req('POST', '/schemas', { raw: ITEMS_TOML, contentType: 'text/plain' });
      const empty = await req('GET', '/rows/shop.items/1');
      expect(empty.status).toBe(404);
      expect(empty.json.error).toBe('row_not_found'); // the old rows did not come back
      expect((await req('DELETE', '/schemas')).status).toBe(403);
      const all = await srv.request('DELETE', `${T}/schemas`, { token: OPERATOR });
      expect(all.status).toBe(200);
      expect(all.json.deleted).toBe(3);
      expect(all.json.ids.sort()).toEqual(['shop.items', 'shop.lines', 'shop.vendors']);
      expect((await req('GET', '/schemas')).json).toEqual([]);
    });
  });
});
