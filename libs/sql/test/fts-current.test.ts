/**
 * Full-text leaves answered at the current LSN (issue 25 §1, executor `preloadCurrentSearch`): a plan
 * with `fts_search` leaves over a table the cache holds reads no storage snapshot (each LevelDB
 * snapshot takes LevelDB's mutex on the event loop), answers what a snapshot read answers, and a
 * frame applied while its search runs sends it to a snapshot instead.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { TenantStore } from '@mmdb/storage';
import { FtsParticipant } from '@mmdb/fts';
import type { PlanNode } from '@mmdb/plan';
import { SqlEngine } from '@mmdb/sql';

jest.setTimeout(60_000);

const DOCS = [
  'namespace = "app"', 'table = "docs"', 'primary_key = ["id"]',
  ...[['id', 'str'], ['body', 'str'], ['n', 'i64']].map(([name, ty]) => `[[columns]]\nname = "${name}"\nty = "${ty}"\nrequired = true`),
  '[[fulltext]]\nfield = "body"',
].join('\n');
const WORDS = ['river', 'stone', 'cloud', 'forest', 'ember', 'harbor'];

let dir: string;
let store: TenantStore;
let sql: SqlEngine;
let fts: FtsParticipant;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sql-fts-current-'));
  fts = new FtsParticipant();
  store = await TenantStore.open({ dir, sync: false, participants: [fts] });
  sql = new SqlEngine(store, undefined, { sources: { fts } });
  await store.registerSchema(DOCS);
  const changes = Array.from({ length: 60 }, (_, i) => ({ op: 'put' as const, schema: 'app.docs', row: { id: `d${i}`, body: `${WORDS[i % 6]} ${WORDS[(i * 7) % 6]} ${WORDS[(i * 5 + 1) % 6]}`, n: i } }));
  await store.commit({ changes });
  // the table in the cache at its current LSN (a scan loads it)
  await sql.run('SELECT count(*) FROM app.docs');
  await sql.exec.tables.settled();
});

afterEach(async () => {
  jest.restoreAllMocks();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const every: PlanNode = { op: 'fts_search', schema: 'app.docs', field: 'body', query: 'river', limit: null } as PlanNode;
const top: PlanNode = { op: 'fts_search', schema: 'app.docs', field: 'body', query: 'stone cloud', limit: 5 } as PlanNode;
const agg: PlanNode = {
  op: 'aggregate', input: { op: 'filter', input: every, predicate: { kind: 'binary', op: '<', left: { kind: 'col', name: 'n' }, right: { kind: 'lit', value: 30 } } },
  group: [], aggregates: [{ name: 'c', fn: 'count', args: [], star: true }, { name: 's', fn: 'total', args: [{ kind: 'col', name: 'n' }] }],
} as unknown as PlanNode;

/** The plan's rows read from one storage snapshot (the path every fts plan took before). */
async function fromSnapshot(p: PlanNode) {
  const s = store.snapshot();
  try {
    return (await sql.runPlan(p, { snapshot: s })).rows;
  } finally {
    await s.release();
  }
}

describe('fts_search leaves at the current LSN', () => {
  it('answers without a storage snapshot, the rows a snapshot read gives, and sees each committed write', async () => {
    for (const p of [every, top, agg]) await sql.runPlan(p); // plans cached, the table's key map built
    const snaps = jest.spyOn(store, 'readSnapshot');
    const before = sql.exec.currentFts;
    for (const p of [every, top, agg]) {
      const rows = (await sql.runPlan(p)).rows;
      expect(snaps).not.toHaveBeenCalled();
      snaps.mockClear();
      expect(rows).toEqual(await fromSnapshot(p));
      snaps.mockClear();
    }
    expect(sql.exec.currentFts - before).toBe(3);
    // a write: the next read sees it, still without a snapshot
    await store.put('app.docs', { id: 'new', body: 'river river harbor', n: 1 });
    await store.put('app.docs', { id: 'd0', body: 'nothing here', n: 0 });
    snaps.mockClear();
    const ids = (await sql.runPlan(every)).rows.map((r) => r[0]);
    expect(snaps).not.toHaveBeenCalled();
    expect(ids).toContain('new');
    expect(ids).not.toContain('d0');
    snaps.mockClear();
    expect((await sql.runPlan(every)).rows).toEqual(await fromSnapshot(every));
  });

  it('takes a snapshot when a frame is applied while the search runs (one state of the store)', async () => {
    await sql.runPlan(every);
    const search = fts.search.bind(fts);
    // the first search commits a matching row before it answers: its hits are then older than the rows
    jest.spyOn(fts, 'search').mockImplementationOnce(async (...args: Parameters<FtsParticipant['search']>) => {
      const hits = await search(...args);
      await store.put('app.docs', { id: 'late', body: 'river late', n: 2 });
      return hits;
    });
    const snaps = jest.spyOn(store, 'readSnapshot');
    const before = sql.exec.currentFts;
    const rows = (await sql.runPlan(every)).rows;
    expect(sql.exec.currentFts).toBe(before);
    expect(snaps).toHaveBeenCalled();
    expect(rows.map((r) => r[0])).toContain('late');
    snaps.mockRestore();
    expect(rows).toEqual(await fromSnapshot(every));
  });

  it('takes a snapshot for a table the cache does not hold', async () => {
    sql.exec.tables.clear();
    const snaps = jest.spyOn(store, 'readSnapshot');
    const before = sql.exec.currentFts;
    const rows = (await sql.runPlan(top)).rows;
    expect(snaps).toHaveBeenCalled();
    expect(sql.exec.currentFts).toBe(before);
    snaps.mockRestore();
    expect(rows).toEqual(await fromSnapshot(top));
  });
});
