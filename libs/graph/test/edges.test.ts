/**
 * Edges as derived writes of the row's frame: column form (one key or an array of
 * keys), edge-table form with parallel edges, updates, deletes, restarts, schema
 * changes, reverse traversal, and the errors of the reader.
 */
import * as fs from 'fs';
import { decodeKey, type CommittedFrame, type TenantStore } from '@mmdb/storage';
import type { GraphIndex } from '../src';
import { openStore, tempDir } from './fixtures';

const AUTHORS = `
namespace = "lib"
table = "authors"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "str"
required = true
[[columns]]
name = "name"
ty = "str"
`;

const PAPERS = (extra = '') => `
namespace = "lib"
table = "papers"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "cites"
ty = "json"
[[columns]]
name = "author"
ty = "str"
[[columns]]
name = "cost"
ty = "f64"
[[relations]]
name = "cites"
target = "lib.papers"
columns = ["cites"]
[[relations]]
name = "written_by"
target = "lib.authors"
columns = ["author"]
${extra}`;

// Edge table whose key is not its two ends: parallel edges, each its own row.
const FLIGHTS = `
namespace = "air"
table = "flights"
primary_key = ["code"]
[[columns]]
name = "code"
ty = "str"
required = true
[[columns]]
name = "from"
ty = "str"
required = true
[[columns]]
name = "to"
ty = "str"
required = true
[[columns]]
name = "minutes"
ty = "i64"
[[columns]]
name = "price"
ty = "f64"
[[relations]]
name = "route"
source = "air.airports"
source_columns = ["from"]
target = "air.airports"
columns = ["to"]
weight = "minutes"
`;

const AIRPORTS = `
namespace = "air"
table = "airports"
primary_key = ["iata"]
[[columns]]
name = "iata"
ty = "str"
required = true
`;

describe('edges follow their rows', () => {
  let dir: string;
  let store: TenantStore;
  let graph: GraphIndex;
  const sorted = async (p: Promise<string[]>) => (await p).sort();

  beforeAll(async () => {
    dir = tempDir();
    ({ store, graph } = await openStore(dir));
    await store.registerSchema(AUTHORS);
    await store.registerSchema(PAPERS());
    await store.registerSchema(AIRPORTS);
    await store.registerSchema(FLIGHTS);
    await store.commit({
      changes: [
        { op: 'put', schema: 'lib.authors', row: { id: 'ada', name: 'Ada' } },
        { op: 'put', schema: 'lib.authors', row: { id: 'bob', name: 'Bob' } },
        { op: 'put', schema: 'lib.papers', row: { id: 1, cites: [2, 3], author: 'ada', cost: 5 } },
        { op: 'put', schema: 'lib.papers', row: { id: 2, cites: [3], author: 'ada' } },
        { op: 'put', schema: 'lib.papers', row: { id: 3, cites: [], author: 'bob' } },
        { op: 'put', schema: 'lib.papers', row: { id: 4, cites: 1, author: 'bob' } }, // one key, not an array
      ],
    });
  });

  afterAll(async () => {
    await store?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('column form: one key or an array of keys, numeric keys as node strings', async () => {
    expect(await sorted(graph.neighbors('lib.papers', 'cites', '1'))).toEqual(['2', '3']);
    expect(await graph.neighbors('lib.papers', 'cites', '4')).toEqual(['1']);
    expect(await graph.neighbors('lib.papers', 'cites', '3')).toEqual([]);
    expect(await graph.bfs('lib.papers', 'cites', '4', 3)).toEqual([
      { node: '4', depth: 0 },
      { node: '1', depth: 1 },
      expect.objectContaining({ depth: 2 }),
      expect.objectContaining({ depth: 2 }),
    ]);
  });

  it('an update replaces the row\'s edges in the same frame, and the adjacency follows', async () => {
    const frames: CommittedFrame[] = [];
    const sub = store.changes.subscribe((f) => frames.push(f));
    const r = await store.put('lib.papers', { id: 1, cites: [3, 4], author: 'bob', cost: 5 });
    sub.unsubscribe();
    expect(await sorted(graph.neighbors('lib.papers', 'cites', '1'))).toEqual(['3', '4']);
    expect(await graph.neighbors('lib.papers', 'written_by', '1')).toEqual(['bob']);
    // The frame that wrote the row carries its edge writes: forward and reverse, old ones deleted.
    const frame = frames.find((f) => f.lsn === r.lsn)!;
    const edgeWrites = frame.writes
      .filter((w) => w.key[0] === 'E'.charCodeAt(0))
      .map((w) => [...decodeKey(w.key).slice(1, 5), w.value === null ? 'del' : 'put'].join(' '))
      .sort();
    expect(edgeWrites).toEqual(
      [
        'cites f 1 2 del',
        'cites r 2 1 del',
        'cites f 1 4 put',
        'cites r 4 1 put',
        'written_by f 1 ada del',
        'written_by r ada 1 del',
        'written_by f 1 bob put',
        'written_by r bob 1 put',
      ].sort(),
    );
    expect((await store.verify()).differences).toEqual([]);
  });

  it('reverse lists the source rows pointing at a key; refused on a self-relation', async () => {
    const rows = await graph.reverse('lib.papers', 'written_by', 'bob');
    expect(rows.map((r) => r.id).sort()).toEqual([1, 3, 4]);
    expect(rows.find((r) => r.id === 1)).toMatchObject({ author: 'bob', cost: 5 });
    expect((await graph.reverse('lib.authors', 'written_by', 'bob')).map((r) => r.id).sort()).toEqual([1, 3, 4]); // from the target's side
    await expect(graph.reverse('lib.papers', 'cites', '3')).rejects.toMatchObject({ code: 'validation_failed', message: expect.stringMatching(/itself/) });
  });

  it('a delete removes the row\'s edges in the same frame', async () => {
    await store.delete('lib.papers', [4]);
    expect(await graph.neighbors('lib.papers', 'cites', '4')).toEqual([]);
    expect((await graph.reverse('lib.papers', 'written_by', 'bob')).map((r) => r.id).sort()).toEqual([1, 3]);
    // Paper 1 still cites 4 (a key, not a constraint): the edge stays until paper 1 changes.
    expect(await sorted(graph.neighbors('lib.papers', 'cites', '1'))).toEqual(['3', '4']);
    expect((await store.verify()).differences).toEqual([]);
  });

  it('edge table: parallel edges are separate rows; deleting one keeps the other; weight column and weight_field', async () => {
    await store.commit({
      changes: [
        { op: 'put', schema: 'air.flights', row: { code: 'F1', from: 'LHR', to: 'JFK', minutes: 480, price: 300 } },
        { op: 'put', schema: 'air.flights', row: { code: 'F2', from: 'LHR', to: 'JFK', minutes: 500, price: 100 } },
        { op: 'put', schema: 'air.flights', row: { code: 'F3', from: 'LHR', to: 'CDG', minutes: 60, price: 50 } },
        { op: 'put', schema: 'air.flights', row: { code: 'F4', from: 'CDG', to: 'JFK', minutes: 470, price: 20 } },
      ],
    });
    expect(await sorted(graph.neighbors('air.flights', 'route', 'LHR'))).toEqual(['CDG', 'JFK']);
    expect(await graph.dijkstra('air.flights', 'route', 'LHR', 'JFK')).toEqual({ path: ['LHR', 'JFK'], total_weight: 480 });
    expect(await graph.dijkstra('air.flights', 'route', 'LHR', 'JFK', { weightField: 'price' })).toEqual({ path: ['LHR', 'CDG', 'JFK'], total_weight: 70 });
    // A field no edge has: every weight defaults to 1, so the direct flight wins.
    expect(await graph.dijkstra('air.flights', 'route', 'LHR', 'JFK', { weightField: 'nope' })).toEqual({ path: ['LHR', 'JFK'], total_weight: 1 });
    await store.delete('air.flights', ['F1']);
    expect(await sorted(graph.neighbors('air.flights', 'route', 'LHR'))).toEqual(['CDG', 'JFK']);
    expect((await graph.dijkstra('air.flights', 'route', 'LHR', 'JFK')).total_weight).toBe(500);
    await store.put('air.flights', { code: 'F2', from: 'LHR', to: 'BOS', minutes: 400 }); // re-pointed
    expect(await sorted(graph.neighbors('air.flights', 'route', 'LHR'))).toEqual(['BOS', 'CDG']);
    expect((await graph.dijkstra('air.flights', 'route', 'LHR', 'JFK')).total_weight).toBe(530);
    await store.put('air.flights', { code: 'F9', from: 'CDG', to: 'LHR', minutes: -5 });
    await expect(graph.dijkstra('air.flights', 'route', 'CDG', 'BOS')).rejects.toMatchObject({ code: 'validation_failed' });
    await store.delete('air.flights', ['F9']);
    expect((await store.verify()).differences).toEqual([]);
  });

  it('edges survive a restart, and writes after it keep the adjacency current', async () => {
    const before = await sorted(graph.neighbors('lib.papers', 'cites', '1'));
    await store.close();
    ({ store, graph } = await openStore(dir));
    expect(await sorted(graph.neighbors('lib.papers', 'cites', '1'))).toEqual(before);
    expect(await sorted(graph.neighbors('air.flights', 'route', 'LHR'))).toEqual(['BOS', 'CDG']);
    await store.put('lib.papers', { id: 1, cites: [2], author: 'ada' });
    expect(await graph.neighbors('lib.papers', 'cites', '1')).toEqual(['2']);
    expect((await graph.reverse('lib.papers', 'written_by', 'ada')).map((r) => r.id).sort()).toEqual([1, 2]);
  });

  it('writes racing the first (lazy) build of an adjacency are not lost', async () => {
    await store.close();
    ({ store, graph } = await openStore(dir)); // no adjacency built yet
    const writes = Promise.all([5, 6, 7].map((i) => store.put('lib.papers', { id: i, cites: [1, i + 100], author: 'ada' })));
    const reads = graph.neighbors('lib.papers', 'cites', '5'); // may build while the writes land
    await Promise.all([writes, reads]);
    for (const i of [5, 6, 7]) expect(await sorted(graph.neighbors('lib.papers', 'cites', String(i)))).toEqual(['1', String(i + 100)].sort());
  });

  it('a re-registered manifest with a new relation derives edges for rows already there', async () => {
    await store.registerSchema(PAPERS(`[[relations]]\nname = "cited_by_author"\ntarget = "lib.authors"\ncolumns = ["author"]\n`));
    expect(await graph.neighbors('lib.papers', 'cited_by_author', '2')).toEqual(['ada']);
    expect(await sorted(graph.neighbors('lib.papers', 'cites', '1'))).toEqual(['2']);
    expect((await store.verify()).differences).toEqual([]);
    // Dropping the relation removes its edges.
    await store.registerSchema(PAPERS());
    await expect(graph.neighbors('lib.papers', 'cited_by_author', '2')).rejects.toMatchObject({ code: 'not_found' });
    expect((await store.verify()).differences).toEqual([]);
  });

  it('unknown schema → schema_not_found; unknown relation → not_found; bad depth → validation_failed', async () => {
    await expect(graph.neighbors('no.such', 'cites', '1')).rejects.toMatchObject({ code: 'schema_not_found' });
    await expect(graph.neighbors('lib.papers', 'nope', '1')).rejects.toMatchObject({ code: 'not_found' });
    await expect(graph.bfs('lib.papers', 'cites', '1', 65)).rejects.toMatchObject({ code: 'validation_failed' });
    await expect(graph.bfs('lib.papers', 'cites', '1', -1)).rejects.toMatchObject({ code: 'validation_failed' });
  });

  it('a relation whose key columns do not fit the target key is refused at registration', async () => {
    const bad = `
namespace = "lib"
table = "bad"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "str"
required = true
[[columns]]
name = "a"
ty = "str"
[[columns]]
name = "b"
ty = "str"
[[relations]]
name = "r"
target = "lib.authors"
columns = ["a", "b"]
`;
    await expect(store.registerSchema(bad)).rejects.toMatchObject({ code: 'validation_failed', message: expect.stringMatching(/1-column primary key/) });
    expect(store.manifest('lib.bad')).toBeUndefined();
  });

  it('dropping a schema clears its edges', async () => {
    await store.commit({ changes: [{ op: 'schema_drop', schema: 'air.flights' }] });
    await expect(graph.neighbors('air.flights', 'route', 'LHR')).rejects.toMatchObject({ code: 'schema_not_found' });
    await store.registerSchema(FLIGHTS);
    expect(await graph.neighbors('air.flights', 'route', 'LHR')).toEqual([]);
  });
});
