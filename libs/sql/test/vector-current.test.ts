/**
 * Vector leaves answered at the current LSN (executor `preloadCurrentSearch`, issue 17): a plan with
 * unfiltered `vector_topk` leaves (alone, or fused with `fts_search` and joined to rows, the hybrid
 * RRF statement) over a table the cache holds reads no storage snapshot — each LevelDB snapshot
 * takes LevelDB's mutex on the event loop — and answers what a snapshot read answers; a filtered
 * top-k reads the table cache's current entry. A filter with a subquery, another metric than the
 * index's, or a store with a group between its apply and its publication take a snapshot as before.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { TenantStore } from '@mmdb/storage';
import { FtsParticipant } from '@mmdb/fts';
import { VectorParticipant } from '@mmdb/vector';
import { SqlEngine, vectorTopkRoute } from '@mmdb/sql';

jest.setTimeout(60_000);

/** The table, its vectors under an exact index or an HNSW graph (the bench's). */
const items = (index: 'exact' | 'hnsw') => [
  'namespace = "app"', 'table = "items"', 'primary_key = ["id"]',
  ...[['id', 'str'], ['body', 'str'], ['cat', 'i64']].map(([name, ty]) => `[[columns]]\nname = "${name}"\nty = "${ty}"\nrequired = true`),
  '[[columns]]\nname = "emb"\nty = "vector"\ndim = 4\nrequired = true',
  `[vector]\ncolumn = "emb"\nmetric = "l2"\nindex = "${index}"`,
  '[[fulltext]]\nfield = "body"',
].join('\n');
const WORDS = ['river', 'stone', 'cloud', 'forest', 'ember', 'harbor'];
const vec = (i: number) => [Math.sin(i), Math.cos(i * 0.7), (i % 7) / 7, ((i * 13) % 11) / 11].map((x) => Math.round(x * 1e4) / 1e4);

let dir: string;
let store: TenantStore;
let sql: SqlEngine;

const RRF = `SELECT r.id, r.cat, f._score FROM (SELECT id, _score FROM rrf((SELECT id FROM app.items ORDER BY emb <-> $1 LIMIT 8), (SELECT id FROM fts_search('app.items', 'body', $2, 8, 'bm25')), 'id') LIMIT 5) f JOIN app.items r ON r.id = f.id ORDER BY f._score DESC`;
const NEAREST = 'SELECT id, emb <-> $1 AS d FROM app.items ORDER BY emb <-> $1 LIMIT 6';
const FILTERED = 'SELECT id FROM app.items WHERE cat < 2 ORDER BY emb <-> $1 LIMIT 4';
const COSINE = 'SELECT id FROM app.items ORDER BY emb <=> $1 LIMIT 4';
const SUBQUERY = 'SELECT id FROM app.items WHERE cat IN (SELECT cat FROM app.items WHERE id = $2) ORDER BY emb <-> $1 LIMIT 4';
const q = [0.3, 0.9, 0.5, 0.2];

async function open(index: 'exact' | 'hnsw'): Promise<void> {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  await setUp(index);
}

async function setUp(index: 'exact' | 'hnsw'): Promise<void> {
  dir = mkdtempSync(join(tmpdir(), 'sql-vector-current-'));
  const fts = new FtsParticipant();
  const vector = new VectorParticipant();
  store = await TenantStore.open({ dir, sync: false, participants: [fts, vector] });
  sql = new SqlEngine(store, undefined, { sources: { fts, vector } });
  await store.registerSchema(items(index));
  const changes = Array.from({ length: 80 }, (_, i) => ({
    op: 'put' as const, schema: 'app.items', row: { id: `d${i}`, body: `${WORDS[i % 6]} ${WORDS[(i * 7) % 6]} ${WORDS[(i * 5 + 1) % 6]}`, cat: i % 5, emb: vec(i) },
  }));
  await store.commit({ changes });
  // the table in the cache at its current LSN (a scan loads it)
  await sql.run('SELECT count(*) FROM app.items');
  await sql.exec.tables.settled();
}

beforeEach(() => setUp('exact'));

afterEach(async () => {
  jest.restoreAllMocks();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The statement's rows read from one storage snapshot (the path every vector plan took before). */
async function fromSnapshot(text: string, params: unknown[]) {
  const s = store.snapshot();
  try {
    return (await sql.run(text, { params, snapshot: s }))[0];
  } finally {
    await s.release();
  }
}

const rowsOf = (r: unknown) => (r as { rows: unknown[][] }).rows;

describe('vector_topk leaves at the current LSN', () => {
  it.each(['exact', 'hnsw'] as const)('answers the hybrid statement and a plain top-k without a storage snapshot, as a snapshot read does, and sees each committed write (%s index)', async (index) => {
    if (index !== 'exact') await open(index);
    // the walk explain names is the index asked for
    expect(JSON.stringify((await sql.run(NEAREST, { params: [q], explain: true }))[0])).toContain(index === 'hnsw' ? 'hnsw index' : 'exact');
    const cases: Array<[string, unknown[]]> = [[RRF, [q, 'river stone']], [NEAREST, [q]], [RRF, [vec(3), 'ember']], [FILTERED, [q]], [FILTERED, [vec(9)]]];
    for (const [text, params] of cases) await sql.run(text, { params }); // plans cached
    const snaps = jest.spyOn(store, 'readSnapshot');
    const before = sql.exec.currentFts;
    for (const [text, params] of cases) {
      const got = rowsOf((await sql.run(text, { params }))[0]);
      expect(snaps).not.toHaveBeenCalled();
      expect(got.length).toBeGreaterThan(0);
      expect(got).toEqual(rowsOf(await fromSnapshot(text, params)));
      snaps.mockClear();
    }
    expect(sql.exec.currentFts - before).toBe(cases.length);
    // the vector route's plan (vector_topk alone) too
    const route = await vectorTopkRoute(sql, 'app.items', { vector: q, k: 5 });
    expect(snaps).not.toHaveBeenCalled();
    expect(route.map((m) => m.id)).toEqual(rowsOf((await sql.run(NEAREST, { params: [q] }))[0]).slice(0, 5).map((r) => r[0]));
    // writes: a new nearest row and a moved one are seen by the next statement, still without a snapshot
    await store.put('app.items', { id: 'new', body: 'river river stone', cat: 1, emb: q });
    await store.put('app.items', { id: 'd0', body: 'nothing here', cat: 0, emb: [9, 9, 9, 9] });
    snaps.mockClear();
    const ids = rowsOf((await sql.run(NEAREST, { params: [q] }))[0]).map((r) => r[0]);
    expect(snaps).not.toHaveBeenCalled();
    expect(ids[0]).toBe('new');
    expect(ids).not.toContain('d0');
    snaps.mockClear();
    expect(rowsOf((await sql.run(RRF, { params: [q, 'river stone'] }))[0]).map((r) => r[0])).toContain('new');
    // the filtered top-k's passing rows are remembered per table LSN: the write is in them
    expect(rowsOf((await sql.run(FILTERED, { params: [q] }))[0])[0][0]).toBe('new');
    await store.put('app.items', { id: 'new', body: 'river river stone', cat: 4, emb: q });
    expect(rowsOf((await sql.run(FILTERED, { params: [q] }))[0]).map((r) => r[0])).not.toContain('new');
    expect(snaps).not.toHaveBeenCalled();
    snaps.mockRestore();
    for (const [text, params] of cases) expect(rowsOf((await sql.run(text, { params }))[0])).toEqual(rowsOf(await fromSnapshot(text, params)));
  });

  it('takes a snapshot for a top-k filter with a subquery and for another metric than the index\'s, with the same answers as before', async () => {
    const cases: Array<[string, unknown[]]> = [[SUBQUERY, [q, 'd3']], [COSINE, [q]]];
    for (const [text, params] of cases) await sql.run(text, { params });
    const before = sql.exec.currentFts;
    for (const [text, params] of cases) {
      const snaps = jest.spyOn(store, 'readSnapshot');
      const got = rowsOf((await sql.run(text, { params }))[0]);
      expect(snaps).toHaveBeenCalled();
      expect(got).toHaveLength(4);
      snaps.mockRestore();
      expect(got).toEqual(rowsOf(await fromSnapshot(text, params)));
    }
    expect(sql.exec.currentFts).toBe(before);
  });

  it('takes a snapshot while a group is between its apply and its publication (checked before and after the searches)', async () => {
    await sql.run(RRF, { params: [q, 'river stone'] });
    const want = rowsOf(await fromSnapshot(RRF, [q, 'river stone']));
    for (const states of [[false], [true, false]]) {
      const settled = jest.spyOn(store, 'settled', 'get');
      for (const s of states) settled.mockReturnValueOnce(s);
      const snaps = jest.spyOn(store, 'readSnapshot');
      const before = sql.exec.currentFts;
      const got = rowsOf((await sql.run(RRF, { params: [q, 'river stone'] }))[0]);
      expect(snaps).toHaveBeenCalled();
      expect(sql.exec.currentFts).toBe(before);
      expect(got).toEqual(want);
      jest.restoreAllMocks();
    }
  });

  it('takes a snapshot for a table the cache does not hold', async () => {
    await sql.run(NEAREST, { params: [q] });
    sql.exec.tables.clear();
    const snaps = jest.spyOn(store, 'readSnapshot');
    const before = sql.exec.currentFts;
    const got = rowsOf((await sql.run(NEAREST, { params: [q] }))[0]);
    expect(snaps).toHaveBeenCalled();
    expect(sql.exec.currentFts).toBe(before);
    snaps.mockRestore();
    expect(got).toEqual(rowsOf(await fromSnapshot(NEAREST, [q])));
  });
});
