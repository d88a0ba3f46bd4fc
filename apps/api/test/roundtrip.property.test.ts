/**
 * Property (issue 15): every column type round-trips through every write surface and every
 * read surface as its canonical form (libs/storage/MANIFEST.md, "Canonical values"), over
 * real HTTPS against the built server; afterwards `verify` finds every derived entry (index,
 * full-text posting, vector) exactly as the rows imply (the table declares all three).
 *
 * Write surfaces: row POST, row PUT, row PATCH (a json value merges as RFC 7396 says), JSON `_batch`, NDJSON `_batch`, SQL INSERT (params),
 * SQL UPDATE, SQL INSERT … SELECT, SQL INSERT … RETURNING (also read back), BEGIN…COMMIT,
 * the Elasticsearch surface (`PUT _doc` and `_bulk` into an index mapped keyword / long /
 * double / boolean / date / object (enabled: false) / dense_vector), and the migrations
 * backfill (a type change of another column and an added required column with a default rewrite
 * every row of the table and cut over: every other value reads back identical).
 * Read surfaces: row GET, SQL SELECT, `/query` (a `get` plan), the Elasticsearch surface
 * (`_source` of get and of an `ids` search, for the ES index's documents: the exact text sent;
 * and for the registered table searched by its schema id: the row's columns but the vector),
 * and watch events (`change` events of `GET /watch?sql=SELECT * FROM prop.t` and of
 * `?plan={"op":"scan",…}`: the last `new` of each row is its canonical form, and no other column).
 * Types: str (unicode, empty, long), i64 (full signed 64-bit), f64 (−0, subnormal, ±1.8e308),
 * bool, timestamp (epoch ms or RFC 3339), json (nested, null, big integers, unicode keys),
 * vector (float32 components, −0, subnormal).
 *
 * Then the server restarts and every row is read again (decoded from disk), and `verify`
 * rebuilds every index and vector entry from the rows and compares.
 *
 * Runs: ROUNDTRIP_RUNS (default 150, ~15 s); seed: ROUNDTRIP_SEED (printed on failure by fast-check).
 */
import fc from 'fast-check';
import * as path from 'path';
import { parseJsonExact, stringifyJson } from '@mmdb/core';
import { FtsParticipant } from '@mmdb/fts';
import { GraphIndex } from '@mmdb/graph';
import { TenantStore } from '@mmdb/storage';
import { VectorParticipant } from '@mmdb/vector';
import { mergeValue } from '../src/rows/merge-patch';
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';
import { RawStream } from './sse-client';

const T = `/v1/tenants/${TENANT}`;
const COLS = ['id', 's', 'i', 'f', 'b', 'ts', 'j', 'v'] as const;
const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function manifest(table: string): string {
  return `namespace = "prop"
table = "${table}"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "str"
required = true
[[columns]]
name = "s"
ty = "str"
[[columns]]
name = "i"
ty = "i64"
[[columns]]
name = "f"
ty = "f64"
[[columns]]
name = "b"
ty = "bool"
[[columns]]
name = "ts"
ty = "timestamp"
[[columns]]
name = "j"
ty = "json"
[[columns]]
name = "v"
ty = "vector"
dim = 3
[[columns]]
name = "k"
ty = "i64"
[[indexes]]
name = "${table}_by_i"
columns = ["i"]
[[indexes]]
name = "${table}_by_s"
columns = ["s"]
[[indexes]]
name = "${table}_by_f"
columns = ["f"]
[[fulltext]]
field = "s"
[vector]
column = "v"
dim = 3
metric = "l2"
`;
}

type Val = unknown;
type Row = Record<string, Val>;

const str = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'binary', maxLength: 24 }) },
  { weight: 1, arbitrary: fc.constant('') },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: 3000, maxLength: 4000 }) },
);
const i64 = fc.oneof(
  fc.bigInt(I64_MIN, I64_MAX),
  fc.constantFrom(I64_MIN, I64_MAX, SAFE, SAFE + 1n, -SAFE - 1n, 0n, -1n),
  fc.bigInt(-SAFE, SAFE),
).map((b) => (b <= SAFE && b >= -SAFE ? Number(b) : b));
const f64 = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(-0, 5e-324, -5e-324, 2.2250738585072014e-308, 1e308, -1.7976931348623157e308, 0.1, 2 ** 60),
);
const ts = fc.oneof(
  fc.integer({ min: -8.64e15, max: 8.64e15 }),
  fc.date({ min: new Date('0000-01-01T00:00:00.000Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }).map((d) => d.toISOString()),
);
const key = fc.oneof({ weight: 9, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }) }, { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', '') });
const json = fc.letrec((tie) => ({
  leaf: fc.oneof(
    fc.constant(null),
    fc.boolean(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    fc.bigInt(-(2n ** 80n), 2n ** 80n).filter((b) => b > SAFE || b < -SAFE),
    fc.string({ unit: 'binary', maxLength: 12 }),
  ),
  node: fc.oneof({ depthSize: 'small', maxDepth: 3 }, tie('leaf'), tie('arr'), tie('obj')),
  arr: fc.array(tie('node'), { maxLength: 4 }),
  obj: fc.dictionary(key, tie('node'), { maxKeys: 4 }),
})).node;
const vec = fc.array(fc.float({ noNaN: true, noDefaultInfinity: true }), { minLength: 3, maxLength: 3 });

/** A row's values (undefined = the column is left out of the write). */
const rowArb = fc.record(
  { s: fc.option(str, { nil: undefined }), i: fc.option(i64), f: fc.option(f64), b: fc.option(fc.boolean()), ts: fc.option(ts), j: fc.option(json, { nil: undefined }), v: fc.option(vec) },
  { requiredKeys: [] },
);

const SURFACES = ['post', 'put', 'patch', 'batch', 'ndjson', 'sql_insert', 'sql_update', 'sql_insert_select', 'sql_returning', 'sql_script', 'es_index', 'es_bulk'] as const;

/** The ES index the `es_*` surfaces write: each of our types as the Elasticsearch type that holds it. */
const ES_MAPPING = {
  mappings: {
    dynamic: 'strict',
    properties: {
      s: { type: 'keyword' }, i: { type: 'long' }, f: { type: 'double' }, b: { type: 'boolean' },
      ts: { type: 'date', format: 'strict_date_optional_time||epoch_millis' }, j: { type: 'object', enabled: false }, v: { type: 'dense_vector', dims: 3 },
    },
  },
};
/** The row's values as an ES document (a column left out is absent). */
const esDoc = (row: Row): Row => Object.fromEntries(COLS.filter((c) => c !== 'id' && row[c] !== undefined).map((c) => [c, row[c]]));
/** What the ES surface answers as `_source` of a registered table's row: its columns but the vector. */
const tableSource = (r: Row) => stringifyJson(Object.fromEntries(COLS.filter((c) => c !== 'v').map((c) => [c, r[c] ?? null])));
type Surface = (typeof SURFACES)[number];

/** The canonical form a read answers (as exact JSON text): a timestamp as epoch ms, a missing column as null. */
function canonical(row: Row): string {
  const o: Row = {};
  for (const c of COLS) {
    let v = row[c];
    if (c === 'ts' && typeof v === 'string') v = Date.parse(v);
    o[c] = v === undefined ? null : v;
  }
  return stringifyJson(o);
}

/** Where two texts part, with some context (the rows may hold 4,000-character strings). */
function firstDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  const from = Math.max(0, i - 60);
  return `at character ${i}:\n  expected …${a.slice(from, i + 120)}\n  got      …${b.slice(from, i + 120)}`;
}

describe('every value round-trips through every surface (property, issue 15)', () => {
  let srv: TestServer;
  const runs = Number(process.env.ROUNDTRIP_RUNS ?? 150);
  const seed = process.env.ROUNDTRIP_SEED ? Number(process.env.ROUNDTRIP_SEED) : undefined;
  let n = 0;
  const seen = new Map<Surface, number>();
  /** id → the canonical text every read must answer. */
  const written = new Map<string, string>();

  const call = async (method: string, p: string, body?: unknown, contentType = 'application/json') => {
    const r = await srv.request(method, T + p, { token: TOKEN, ...(body === undefined ? {} : { raw: typeof body === 'string' ? body : stringifyJson(body), contentType }) });
    if (r.status !== 200 && r.status !== 201) throw new Error(`${method} ${p} → ${r.status} ${r.text.slice(0, 400)}`);
    return r.text ? (parseJsonExact(r.text) as any) : undefined;
  };
  const sql = (q: string, params: unknown[]) => call('POST', '/sql', { sql: q, params });
  /** SQL parameters: a json value as its JSON text, the rest as they are. */
  const sqlParams = (id: string, row: Row) => [id, row.s ?? null, row.i ?? null, row.f ?? null, row.b ?? null, row.ts ?? null, row.j === undefined ? null : stringifyJson(row.j), row.v ?? null];
  const INSERT = 'INSERT INTO prop.t (id, s, i, f, b, ts, j, v) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)';

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    for (const t of ['t', 'stage']) await call('POST', '/schemas', manifest(t), 'text/plain');
    await call('PUT', '/es/propes', ES_MAPPING);
    for (const [how, q] of [['sql', 'SELECT * FROM prop.t'], ['plan', '{"op":"scan","schema":"prop.t"}']] as const) {
      const w = await RawStream.open(srv.url + `${T}/watch?${how}=${encodeURIComponent(q)}`, srv.ca, { accept: 'text/event-stream', authorization: `Bearer ${TOKEN}` });
      if (w.status !== 200) throw new Error(`watch ${how} → ${w.status}`);
      watches.push([`${how}=${q}`, w]);
    }
  }, 60_000);
  let stopped = false;
  const watches: Array<[string, RawStream]> = [];
  /** id → the exact `_source` text of the ES index's document. */
  const esWritten = new Map<string, string>();
  afterAll(async () => {
    for (const [, w] of watches) w.close();
    if (!stopped) await srv.stop();
  });

  async function write(surface: Surface, id: string, row: Row): Promise<string | undefined> {
    const body = { id, ...row };
    switch (surface) {
      case 'es_index':
        await call('PUT', `/es/propes/_doc/${id}`, stringifyJson(esDoc(row)));
        return;
      case 'es_bulk': {
        const r = await call('POST', '/es/_bulk', `{"index":{"_index":"propes","_id":"${id}"}}\n${stringifyJson(esDoc(row))}\n`, 'application/x-ndjson');
        if (r.errors) throw new Error(`_bulk: ${stringifyJson(r.items)}`);
        return;
      }
      case 'post':
        await call('POST', '/rows/prop.t', body);
        return;
      case 'put':
        await call('PUT', `/rows/prop.t/${encodeURIComponent(id)}`, row);
        return;
      case 'patch':
        // onto a row holding other values; a json column merges as RFC 7396 says (into null here)
        await call('POST', '/rows/prop.t', { id, s: 'before', i: 1, f: 2.5, b: true, ts: 0, v: [1, 1, 1] });
        await call('PATCH', `/rows/prop.t/${encodeURIComponent(id)}`, {
          ...Object.fromEntries(['s', 'i', 'f', 'b', 'ts', 'v'].map((c) => [c, row[c as keyof typeof row] ?? null])),
          ...(row.j !== undefined ? { j: row.j } : {}),
        });
        return;
      case 'batch':
        await call('POST', '/rows/prop.t/_batch', [body]);
        return;
      case 'ndjson':
        await call('POST', '/rows/prop.t/_batch', stringifyJson(body) + '\n', 'application/x-ndjson');
        return;
      case 'sql_insert':
        await sql(INSERT, sqlParams(id, row));
        return;
      case 'sql_update': {
        await call('POST', '/rows/prop.t', { id, s: 'before', i: 1, j: { before: true } });
        const r = await sql('UPDATE prop.t SET s = $2, i = $3, f = $4, b = $5, ts = $6, j = $7, v = $8 WHERE id = $1', sqlParams(id, row));
        if (r.count !== 1) throw new Error(`UPDATE matched ${r.count} rows`);
        return;
      }
      case 'sql_insert_select':
        await call('POST', '/rows/prop.stage', body);
        await sql('INSERT INTO prop.t SELECT * FROM prop.stage WHERE id = $1', [id]);
        return;
      case 'sql_returning': {
        const r = await sql(`${INSERT} RETURNING *`, sqlParams(id, row));
        return stringifyJson(Object.fromEntries(COLS.map((c) => [c, r.returning[0][c] ?? null])));
      }
      case 'sql_script': {
        const r = await srv.request('POST', `${T}/sql`, { token: TOKEN, raw: stringifyJson({ sql: `BEGIN; ${INSERT}; UPDATE prop.t SET s = s WHERE id = $1; COMMIT;`, params: sqlParams(id, row) }) });
        if (r.status !== 200) throw new Error(`script → ${r.status} ${r.text.slice(0, 400)}`);
        return;
      }
    }
  }

  async function reads(id: string): Promise<Record<string, string>> {
    const got = await call('GET', `/rows/prop.t/${encodeURIComponent(id)}`);
    const sel = await sql('SELECT * FROM prop.t WHERE id = $1', [id]);
    const q = await call('POST', '/query', { op: 'get', schema: 'prop.t', key: [{ kind: 'lit', value: id }] });
    const norm = (r: Row) => stringifyJson(Object.fromEntries(COLS.map((c) => [c, r[c] ?? null])));
    // every surface answers the row's columns only (no executor-internal `#version:` column)
    for (const [where, r] of [['row GET', got], ['SQL SELECT', sel.rows[0]], ['/query', q[0]]] as const) {
      const extra = Object.keys(r ?? {}).filter((k) => !COLS.includes(k as never) && k !== 'k' && k !== 'extra');
      if (extra.length) throw new Error(`${where} of ${id} answers columns the table does not have: ${extra.join(', ')}`);
    }
    const esGet = await call('GET', `/es/prop.t/_doc/${encodeURIComponent(id)}`);
    const esHit = (await call('POST', '/es/prop.t/_search', { query: { ids: { values: [id] } } })).hits.hits[0];
    return { 'row GET': norm(got), 'SQL SELECT': norm(sel.rows[0] ?? {}), '/query': norm(q[0] ?? {}), 'ES get _source': tableSource(esGet._source ?? {}), 'ES search _source': tableSource(esHit?._source ?? {}) };
  }

  /** The ES index's document: `_source` of get and of an ids search, as the exact JSON sent. */
  async function esReads(id: string): Promise<Record<string, string>> {
    const got = await call('GET', `/es/propes/_doc/${id}`);
    const hit = (await call('POST', '/es/propes/_search', { query: { ids: { values: [id] } } })).hits.hits[0];
    return { 'ES get _source': stringifyJson(got._source), 'ES search _source': stringifyJson(hit?._source) };
  }

  it('writes random rows through each write surface and reads them back unchanged through each read surface', async () => {
    await fc.assert(
      fc.asyncProperty(rowArb, async (row) => {
        // every surface in turn (each is exercised whatever the number of runs)
        const surface = SURFACES[n % SURFACES.length];
        const id = `r${++n}`;
        seen.set(surface, (seen.get(surface) ?? 0) + 1);
        if (surface === 'es_index' || surface === 'es_bulk') {
          const sent = stringifyJson(esDoc(row));
          esWritten.set(id, sent);
          await write(surface, id, row);
          for (const [where, text] of Object.entries(await esReads(id))) if (text !== sent) throw new Error(`${surface} → ${where}: ${firstDifference(sent, text)}`);
          return;
        }
        const expected = canonical({ id, ...row, ...(surface === 'patch' && row.j !== undefined ? { j: mergeValue(null, row.j) } : {}) });
        written.set(id, expected);
        const returned = await write(surface, id, row);
        const got = await reads(id);
        if (returned !== undefined) got['RETURNING'] = returned;
        for (const [where, text] of Object.entries(got)) {
          const want = where.startsWith('ES') ? tableSource(parseJsonExact(expected) as Row) : expected;
          if (text !== want) throw new Error(`${surface} → ${where}: ${firstDifference(want, text)}`);
        }
      }),
      { numRuns: runs, ...(seed !== undefined ? { seed } : {}), endOnFailure: true },
    );
    // every surface was exercised
    for (const s of SURFACES) expect(seen.get(s) ?? 0).toBeGreaterThan(0);
  }, Math.max(120_000, runs * 800));

  it('watch: the change events of SELECT * FROM prop.t (and of a scan plan) carry every row as written (its last `new`)', async () => {
    for (const [what, watch] of watches) {
      const last = new Map<string, string>();
      const take = () => {
        last.clear();
        for (const b of watch.events('change')) {
          for (const c of (parseJsonExact(b.data!) as { changes: Array<{ key: unknown[]; op: string; new?: Row }> }).changes) {
            const k = String(c.key[0]);
            const extra = Object.keys(c.new ?? {}).filter((x) => !COLS.includes(x as never) && x !== 'k');
            if (extra.length) throw new Error(`watch ${what}: the change of ${k} carries columns the table does not have: ${extra.join(', ')}`);
            if (c.op === 'delete') last.delete(k);
            else last.set(k, stringifyJson(Object.fromEntries(COLS.map((col) => [col, c.new?.[col] ?? null]))));
          }
        }
      };
      const done = () => {
        take();
        return [...written].every(([id, text]) => last.get(id) === text);
      };
      await watch.until(done, 30_000).catch(() => undefined);
      take();
      for (const [id, expected] of written) {
        const got = last.get(id);
        if (got !== expected) throw new Error(`watch ${what}, the change of ${id}: ${got === undefined ? 'no event' : firstDifference(expected, got)}`);
      }
      expect(last.size).toBe(written.size);
      watch.close();
    }
  }, 90_000);

  it('migrations: a backfill that rewrites every row (a type change of another column, an added required column with a default) leaves every other value identical', async () => {
    const m = await call('POST', '/migrations', {
      schema: 'prop.t',
      operations: [{ op: 'change_type', column: 'k', ty: 'str' }, { op: 'add_column', name: 'extra', ty: 'i64', required: true, default: 7 }],
      auto_cutover: true,
    });
    expect(m.plan).toBe('rewrite');
    const end = Date.now() + 60_000;
    let now = m;
    while (now.state !== 'Completed') {
      if (['Failed', 'Aborted'].includes(now.state) || Date.now() > end) throw new Error(`migration ${m.id} is ${now.state}: ${now.reason} ${stringifyJson(now.offending_keys)}`);
      await new Promise((r) => setTimeout(r, 100));
      now = await call('GET', `/migrations/${m.id}`);
    }
    const all = await sql('SELECT * FROM prop.t', []);
    expect(all.rows).toHaveLength(written.size);
    for (const r of all.rows as Row[]) {
      expect(r.extra).toBe(7);
      const text = stringifyJson(Object.fromEntries(COLS.map((c) => [c, r[c] ?? null])));
      if (text !== written.get(r.id as string)) throw new Error(`after the backfill, ${r.id}: ${firstDifference(written.get(r.id as string)!, text)}`);
    }
  }, 90_000);

  it('after a restart (rows decoded from disk, caches cold) every row still reads back unchanged', async () => {
    await srv.stop();
    await srv.start();
    const all = await sql('SELECT * FROM prop.t', []);
    const byId = new Map<string, Row>(all.rows.map((r: Row) => [r.id as string, r]));
    expect(byId.size).toBe(written.size);
    for (const [id, expected] of written) {
      const text = stringifyJson(Object.fromEntries(COLS.map((c) => [c, byId.get(id)?.[c] ?? null])));
      if (text !== expected) throw new Error(`after restart, SQL SELECT of ${id}: ${firstDifference(expected, text)}`);
    }
    for (const id of [...written.keys()].slice(0, 40)) {
      const got = await reads(id);
      for (const [where, text] of Object.entries(got)) {
        const expected = where.startsWith('ES') ? tableSource(parseJsonExact(written.get(id)!) as Row) : written.get(id)!;
        if (text !== expected) throw new Error(`after restart, ${where} of ${id}: ${firstDifference(expected, text)}`);
      }
    }
    for (const [id, sent] of esWritten) {
      for (const [where, text] of Object.entries(await esReads(id))) if (text !== sent) throw new Error(`after restart, ${where} of ${id}: ${firstDifference(sent, text)}`);
    }
  });

  it('verify finds every index and vector entry as the written rows imply', async () => {
    await srv.stop();
    stopped = true;
    const participants = [new VectorParticipant(), new GraphIndex(), new FtsParticipant()];
    const store = await TenantStore.open({ dir: path.join(srv.dataDir, 'tenants', TENANT, 'store'), participants: participants as never, sync: false });
    try {
      const report = await store.verify();
      expect(report.differences).toEqual([]);
      expect(report.ok).toBe(true);
      expect(report.rows).toBeGreaterThanOrEqual(n);
    } finally {
      await store.close();
    }
  });
});
