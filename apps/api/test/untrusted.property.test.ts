/**
 * Property (issue 25, section 6): every public door that takes untrusted input either succeeds
 * or answers a 4xx whose body names a catalogue code with that code's status — never a 500, never
 * a hang (each request has a deadline), never a partial write (`verify` is clean at the end and
 * every refused row write left the table as it was).
 *
 * Doors, over real HTTPS against the built server: the manifest parser (POST /schemas, mutated
 * TOML), the SQL parser, binder and executor (random token soup, and well-formed statements over
 * random expressions), the plan validator (mutated and random JSON plans on /query), the NDJSON
 * reader (random lines), pk path decoding (random and broken percent-encodings), If-Match parsing,
 * and the vector and full-text bodies.
 *
 * Runs per door: UNTRUSTED_RUNS (default 60); fast-check prints the seed of a failure.
 */
import fc from 'fast-check';
import * as path from 'path';
import { ERROR_CATALOGUE } from '@mmdb/core';
import { FtsParticipant } from '@mmdb/fts';
import { GraphIndex } from '@mmdb/graph';
import { TenantStore } from '@mmdb/storage';
import { VectorParticipant } from '@mmdb/vector';
import { bootstrapEnv, type Res, TENANT, TestServer, TOKEN } from './server';
import { ITEMS_FZ, OWNERS_FZ, SQL_TOKENS, sqlExpr, sqlLiteral } from './untrusted.gen';

jest.setTimeout(600_000);

const T = `/v1/tenants/${TENANT}`;
const RUNS = Number(process.env.UNTRUSTED_RUNS ?? 60);
const CATALOGUE = ERROR_CATALOGUE as Record<string, { status: number }>;

let srv: TestServer;
let stopped = false;

/** The door's contract: 2xx, or a 4xx naming a catalogue code whose status it carries. */
function expectClean(r: Res, what: string): void {
  if (r.status >= 200 && r.status < 300) return;
  const code = r.json?.error;
  const ok = r.status >= 400 && r.status < 500 && typeof code === 'string' && CATALOGUE[code]?.status === r.status && typeof r.json?.message === 'string';
  if (!ok) throw new Error(`${what} → ${r.status} ${r.text.slice(0, 400)}`);
}

/** A request with a deadline: a hang is a failure, not a stuck test run. */
async function call(method: string, p: string, opts: Parameters<TestServer['request']>[2], what: string): Promise<Res> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within 30 s`)), 30_000)));
  try {
    const r = await Promise.race([srv.request(method, p, { token: TOKEN, ...opts }), deadline]);
    expectClean(r, what);

    return r;
  } finally {
    clearTimeout(timer);
  }
}

const rowsOf = async (): Promise<string> => JSON.stringify((await call('POST', `${T}/sql`, { body: { sql: 'SELECT * FROM fz.items ORDER BY id' } }, 'snapshot')).json.rows);

beforeAll(async () => {
  srv = await new TestServer(TestServer.tempDir(), bootstrapEnv({ DB_QUERY_TIMEOUT_MS: '2000' })).start();
  for (const toml of [OWNERS_FZ, ITEMS_FZ]) expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: toml, contentType: 'text/plain' })).status).toBe(200);
  for (let i = 0; i < 5; i++) expect((await srv.request('POST', `${T}/rows/fz.owners`, { token: TOKEN, body: { id: `o${i}` } })).status).toBe(200);
  for (let i = 0; i < 20; i++) {
    const row = { id: i, name: `item ${i}`, price: i * 1.5, owner: `o${i % 5}`, tags: { n: i, list: [i, `t${i}`] }, doc: `the quick item number ${i} jumps`, emb: [1, i + 1, (i % 3) - 1] };
    expect((await srv.request('POST', `${T}/rows/fz.items`, { token: TOKEN, body: row })).status).toBe(200);
  }
});

afterAll(async () => {
  if (!stopped) await srv?.stop();
});

describe('untrusted input at every public door', () => {
  it('the manifest parser: mutated and random TOML registers or answers a catalogue 4xx', async () => {
    const lines = ITEMS_FZ.replace('table = "items"', 'table = "m"').split('\n');
    const mutated = fc.tuple(
      fc.array(fc.nat(lines.length - 1), { maxLength: 4 }),
      fc.array(fc.tuple(fc.nat(lines.length - 1), fc.oneof(fc.string(), fc.constantFrom('ty = "nope"', 'dim = -1', 'dim = 1e9', 'columns = []', 'metric = "x"', 'expr = "price >"', 'expr = "(SELECT 1)"', 'references = "fz.none"', '[[columns]]', 'name = ""', 'primary_key = []', 'required = "yes"', 'default = [1]', 'analyzer = "klingon"', 'k1 = -5', 'target = "fz.items"'))), { maxLength: 4 }),
      fc.nat(999),
    ).map(([drop, set, n]) => {
      const out = lines.map((l) => l);
      for (const [i, s] of set) out[i] = s;
      return out.filter((_, i) => !drop.includes(i)).join('\n').replace('table = "m"', `table = "m${n}"`);
    });
    await fc.assert(
      fc.asyncProperty(fc.oneof(mutated, fc.nat(999).map((n) => lines.join('\n').replace('table = "m"', `table = "v${n}"`)), fc.string({ maxLength: 200 }), fc.constantFrom('', '\u0000', '[[[', 'namespace = 1\ntable = 2')), async (toml) => {
        await call('POST', `${T}/schemas`, { raw: toml, contentType: 'text/plain' }, `POST /schemas ${JSON.stringify(toml)}`);
      }),
      { numRuns: RUNS },
    );
  });

  it('SQL: random token soup and well-formed statements over random expressions', async () => {
    const soup = fc.array(fc.oneof(fc.constantFrom(...SQL_TOKENS), sqlLiteral), { minLength: 1, maxLength: 24 }).map((t) => t.join(' '));
    const stmt = fc.oneof(
      fc.tuple(sqlExpr, sqlExpr).map(([a, b]) => `SELECT ${a} AS x, count(*) FROM fz.items WHERE ${b} GROUP BY 1 ORDER BY 1 LIMIT 5`),
      fc.tuple(sqlExpr, sqlExpr).map(([a, b]) => `SELECT i.id, ${a} FROM fz.items i JOIN fz.owners o ON o.id = i.owner WHERE ${b}`),
      fc.tuple(fc.integer({ min: 100, max: 10_000 }), sqlLiteral, sqlLiteral, sqlLiteral, sqlLiteral).map(([id, n, p, o, e]) => `INSERT INTO fz.items (id, name, price, owner, emb) VALUES (${id}, ${n}, ${p}, ${o}, ${e})`),
      fc.tuple(fc.constantFrom('name', 'price', 'owner', 'tags', 'emb', 'doc', 'id'), sqlExpr, sqlExpr).map(([c, v, w]) => `UPDATE fz.items SET ${c} = ${v} WHERE ${w}`),
      fc.tuple(sqlExpr).map(([w]) => `BEGIN; UPDATE fz.items SET price = price + 1 WHERE ${w}; INSERT INTO fz.items (id, name) VALUES (1, 'dup'); COMMIT`),
      fc.tuple(sqlExpr).map(([w]) => `DELETE FROM fz.items WHERE ${w}`),
      sqlExpr.map((e) => `WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE ${e}) SELECT count(*) FROM r`),
    );
    await fc.assert(
      fc.asyncProperty(fc.oneof(soup, stmt), fc.array(fc.oneof(sqlLiteral.map((l) => l), fc.jsonValue()), { maxLength: 3 }), async (sql, params) => {
        const before = await rowsOf();
        const r = await call('POST', `${T}/sql`, { body: { sql, params } }, `SQL ${JSON.stringify(sql)}`);
        if (r.status >= 400) expect(await rowsOf()).toBe(before); // a refused statement wrote nothing
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it('the plan validator: mutated and random plans on /query', async () => {
    const good = { op: 'limit', limit: { kind: 'lit', value: 3 }, input: { op: 'filter', predicate: { kind: 'binary', op: '>', left: { kind: 'col', name: 'price' }, right: { kind: 'lit', value: 1 } }, input: { op: 'scan', schema: 'fz.items' } } };
    const mutate = (v: unknown, path: number[], leaf: unknown): unknown => {
      if (path.length === 0 || v === null || typeof v !== 'object') return leaf;
      const keys = Object.keys(v as object);
      if (keys.length === 0) return leaf;
      const k = keys[path[0] % keys.length];
      return Array.isArray(v) ? v.map((x, i) => (String(i) === k ? mutate(x, path.slice(1), leaf) : x)) : { ...(v as object), [k]: mutate((v as Record<string, unknown>)[k], path.slice(1), leaf) };
    };
    const plan = fc.oneof(
      fc.constant(good),
      fc.tuple(fc.array(fc.nat(9), { minLength: 1, maxLength: 5 }), fc.oneof(fc.jsonValue(), fc.constantFrom({ op: 'scan', schema: 'fz.none' }, { op: 'nope' }, { kind: 'col', name: 'nope' }, -1, 1e308, 'scan'))).map(([p, leaf]) => mutate(good, p, leaf)),
      fc.jsonValue(),
      fc.dictionary(fc.constantFrom('op', 'input', 'schema', 'n', 'predicate', 'columns', 'left', 'right'), fc.jsonValue()),
    );
    await fc.assert(
      fc.asyncProperty(plan, async (p) => {
        await call('POST', `${T}/query`, { raw: JSON.stringify(p) ?? 'null' }, `plan ${JSON.stringify(p).slice(0, 300)}`);
      }),
      { numRuns: RUNS },
    );
  });

  it('the NDJSON reader: random lines are stored or refused with a catalogue code, never a 500', async () => {
    const line = fc.oneof(
      fc.record({ id: fc.integer({ min: 20_000, max: 30_000 }), name: fc.string(), price: fc.oneof(fc.double(), fc.constant(-1)), owner: fc.constantFrom('o1', 'o9', undefined) }).map((r) => JSON.stringify(r)),
      fc.string({ maxLength: 40 }),
      fc.constantFrom('', '\r', '{', '[]', 'null', '{"id":1e999}', '{"id":12345678901234567890123}', '{"id":"x"}', '{"id":5,"id":6}', '\u2028', '{"__proto__":{"id":1}}'),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(line, { maxLength: 12 }), fc.constantFrom('\n', '\r\n'), fc.integer({ min: 1, max: 5 }), async (lines, nl, chunk) => {
        await call('POST', `${T}/rows/fz.items/_batch?chunk=${chunk}`, { raw: lines.join(nl), contentType: 'application/x-ndjson' }, `NDJSON ${JSON.stringify(lines)}`);
      }),
      { numRuns: RUNS },
    );
  });

  it('pk path decoding and If-Match parsing', async () => {
    const pk = fc.oneof(fc.integer({ min: 1000, max: 1100 }).map(String), fc.string({ maxLength: 30 }).map(encodeURIComponent), fc.constantFrom('%', '%zz', '%C0%AF', '%FF', '..', '%2F', '1%00', '9223372036854775808', '-0', '1.5', '%E2%80%AE', 'a/b'));
    const ifMatch = fc.oneof(fc.constant(undefined), fc.string({ maxLength: 20 }).filter((s) => /^[\x20-\x7e]*$/.test(s)), fc.constantFrom('*', '"3"', 'W/"1"', '1,2', '-1', '99999999999999999999', '0x1', ''));
    await fc.assert(
      fc.asyncProperty(pk, ifMatch, fc.constantFrom('GET', 'PUT', 'PATCH', 'DELETE'), async (k, m, method) => {
        const before = await rowsOf();
        const body = method === 'PUT' ? { name: `p${k}`, price: 1 } : method === 'PATCH' ? { price: 2 } : undefined;
        const r = await call(method, `${T}/rows/fz.items/${k}`, { body, headers: method === 'GET' || m === undefined ? {} : { 'if-match': m } }, `${method} pk=${k} If-Match=${m}`);
        if (r.status >= 400) expect(await rowsOf()).toBe(before);
      }),
      { numRuns: RUNS },
    );
  });

  it('vector and full-text bodies', async () => {
    const vec = fc.oneof(fc.array(fc.oneof(fc.double(), fc.integer()), { maxLength: 5 }), fc.jsonValue());
    const valid = fc.record({ id: fc.string({ minLength: 1, maxLength: 8 }), vector: fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: 3, maxLength: 3 }), k: fc.integer({ min: 1, max: 10 }) }).map((b) => ({ ...b, embedding: b.vector }));
    const vbody = fc.oneof(valid, fc.record({ id: fc.oneof(fc.string(), fc.integer(), fc.jsonValue()), vector: vec, embedding: vec, k: fc.oneof(fc.integer({ min: -5, max: 5000 }), fc.jsonValue()), mode: fc.constantFrom('fast', 'high_recall', 'exact', 'x', undefined), metric: fc.constantFrom('l2', 'cosine', 'nope', undefined), filter: fc.jsonValue() }, { requiredKeys: [] }));
    const fbody = fc.oneof(fc.record({ doc_id: fc.string({ minLength: 1, maxLength: 8 }), text: fc.string() }), fc.record({ doc_id: fc.oneof(fc.string(), fc.jsonValue()), text: fc.oneof(fc.string(), fc.jsonValue()) }, { requiredKeys: [] }));
    const q = fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom('"unclosed', '-', '*', 'a* b*', '""', '(((', 'OR AND NOT', '"a b"~99999'));
    await fc.assert(
      fc.asyncProperty(vbody, fbody, q, fc.constantFrom('vz.free', 'fz.items'), fc.constantFrom('fz.free', 'fz.items'), async (v, f, text, table, ftable) => {
        await call('POST', `${T}/vector/${table}/put`, { body: v }, `vector put ${JSON.stringify(v)}`);
        await call('POST', `${T}/vector/${table}/topk`, { body: v }, `vector topk ${JSON.stringify(v)}`);
        await call('POST', `${T}/fts/${ftable}/doc`, { body: f }, `fts post ${JSON.stringify(f)}`);
        await call('GET', `${T}/fts/fz.items/doc?q=${encodeURIComponent(text)}&limit=5`, {}, `fts search ${JSON.stringify(text)}`);
      }),
      { numRuns: RUNS },
    );
  });

  it('each door accepts a known-good input and refuses a known-bad one (the doors are reached, not stopped early)', async () => {
    const cases: Array<[string, string, Parameters<TestServer['request']>[2], number, string?]> = [
      ['POST', `${T}/schemas`, { raw: ITEMS_FZ.replace('table = "items"', 'table = "anchor"'), contentType: 'text/plain' }, 200],
      ['POST', `${T}/schemas`, { raw: 'namespace = 1', contentType: 'text/plain' }, 400, 'validation_failed'],
      ['POST', `${T}/sql`, { body: { sql: 'SELECT count(*) FROM fz.items' } }, 200],
      ['POST', `${T}/sql`, { body: { sql: 'SELEC 1' } }, 400],
      ['POST', `${T}/query`, { body: { op: 'scan', schema: 'fz.owners' } }, 200],
      ['POST', `${T}/query`, { body: { op: 'nope' } }, 400, 'validation_failed'],
      ['POST', `${T}/rows/fz.items/_batch`, { raw: '{"id":90001,"name":"anchor"}\n', contentType: 'application/x-ndjson' }, 200],
      ['GET', `${T}/rows/fz.items/%zz`, {}, 400, 'validation_failed'],
      ['GET', `${T}/rows/fz.items/1`, {}, 200],
      ['PUT', `${T}/rows/fz.items/90001`, { body: { name: 'anchor2' }, headers: { 'if-match': 'garbage' } }, 400],
      ['POST', `${T}/vector/vz.anchor/put`, { body: { id: 'a', embedding: [1, 2, 3] } }, 200],
      ['POST', `${T}/vector/vz.anchor/topk`, { body: { vector: [1, 2], k: 1 } }, 400, 'dim_mismatch'],
      ['POST', `${T}/fts/fz_anchor/body`, { body: { doc_id: 'a', text: 'hello' } }, 200],
      ['GET', `${T}/fts/fz.items/doc?q=item&limit=0`, {}, 400, 'validation_failed'],
      // a registered schema's documents and vectors are its rows: no standalone entry beside them
      ['POST', `${T}/fts/fz.items/doc`, { body: { doc_id: '1', text: 'not a row' } }, 400, 'validation_failed'],
      ['POST', `${T}/fts/fz.items/other`, { body: { doc_id: '1', text: 'not a field' } }, 400, 'validation_failed'],
      ['POST', `${T}/vector/fz.items/put`, { body: { id: '1', embedding: [1, 2, 3] } }, 400, 'validation_failed'],
    ];
    for (const [method, p, opts, status, code] of cases) {
      const r = await call(method, p, opts, `anchor ${method} ${p}`);
      expect([method, p, r.status, code ? r.json?.error : undefined]).toEqual([method, p, status, code]);
    }
  });

  it('verify is clean after all of it', async () => {
    await srv.stop();
    stopped = true;
    const store = await TenantStore.open({ dir: path.join(srv.dataDir, 'tenants', TENANT, 'store'), participants: [new VectorParticipant(), new GraphIndex(), new FtsParticipant()] as never, sync: false });
    try {
      const report = await store.verify();
      expect(report.differences).toEqual([]);
      expect(report.ok).toBe(true);
    } finally {
      await store.close();
    }
  });
});
