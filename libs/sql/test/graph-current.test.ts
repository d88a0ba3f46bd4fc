/**
 * graph_expand answered from the store as it is now (no storage snapshot: the adjacency is built
 * and the reached rows are in the table cache at the current LSN), checked against a brute-force
 * walk of the rows as written, across writes that change edges and filtered columns.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { TenantStore } from '@mmdb/storage';
import { GraphIndex } from '@mmdb/graph';
import { SqlEngine } from '@mmdb/sql';

const ITEMS = `
namespace = "g"
table = "items"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "str"
required = true
[[columns]]
name = "cat"
ty = "i64"
required = true
[[columns]]
name = "links"
ty = "json"
[[relations]]
name = "links"
target = "g.items"
columns = ["links"]
`;

const N = 300;
let dir: string;
let store: TenantStore;
let sql: SqlEngine;

/** A seeded uniform source. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

/** The rows as written: cat and links per id. */
const rows = new Map<string, { cat: number; links: string[] }>();

/** Nodes reached from `src` at depth 1..2 (each once, at its least depth), with a row whose cat < below: the statement's answer. */
function expected(src: string, below: number): string[] {
  const depth = new Map<string, number>();
  let frontier = [src];
  for (let d = 1; d <= 2; d++) {
    const next: string[] = [];
    for (const u of frontier) for (const v of rows.get(u)?.links ?? []) {
      if (depth.has(v)) continue;
      depth.set(v, d);
      next.push(v);
    }
    frontier = next;
  }
  return [...depth.keys()].filter((id) => (rows.get(id)?.cat ?? Infinity) < below).sort();
}

const HOP = `SELECT r.id, r.cat FROM graph_expand('g.items', 'links', $1, 1, 2) g JOIN g.items r ON r.id = g._node WHERE r.cat < $2`;

async function got(src: string, below: number): Promise<string[]> {
  const [res] = await sql.run(HOP, { params: [src, below] });
  if (res.kind !== 'select') throw new Error(res.kind);
  return res.rows.map((r) => String(r[0])).sort();
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sql-graph-current-'));
  const graph = new GraphIndex();
  store = await TenantStore.open({ dir, sync: false, participants: [graph] });
  graph.attach(store);
  sql = new SqlEngine(store, undefined, { sources: { graph } });
  await store.registerSchema(ITEMS);
  rows.clear();
  const r = rng(7);
  for (let i = 0; i < N; i++) {
    const links = [Math.floor(r() * N), Math.floor(r() * N), Math.floor(r() * N)].filter((j) => j !== i).map((j) => `n${j}`);
    rows.set(`n${i}`, { cat: Math.floor(r() * 100), links: [...new Set(links)] });
  }
  await store.commit({ changes: [...rows].map(([id, v]) => ({ op: 'put' as const, schema: 'g.items', row: { id, ...v } })) });
});

afterEach(async () => {
  jest.restoreAllMocks();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('graph_expand without a storage snapshot', () => {
  it('answers a warm 2-hop join from the built adjacency and the cached rows, as a brute-force walk does', async () => {
    expect(await got('n0', 50)).toEqual(expected('n0', 50)); // builds the adjacency, fills the table cache
    await sql.run('SELECT count(*) FROM g.items');
    const snapshots = jest.spyOn(store, 'readSnapshot');
    for (let i = 0; i < N; i += 7) expect(await got(`n${i}`, 50)).toEqual(expected(`n${i}`, 50));
    expect(snapshots).not.toHaveBeenCalled();
  });

  it('sees every committed write: changed edges and filtered columns, a new node, a deleted row', async () => {
    await got('n0', 50);
    await sql.run('SELECT count(*) FROM g.items');
    const r = rng(11);
    for (let step = 0; step < 25; step++) {
      const id = `n${Math.floor(r() * N)}`;
      const kind = step % 4;
      if (kind === 0) {
        const v = { cat: Math.floor(r() * 100), links: [`n${Math.floor(r() * N)}`, `n${Math.floor(r() * N)}`].filter((x) => x !== id) };
        rows.set(id, v);
        await store.put('g.items', { id, ...v });
      } else if (kind === 1) {
        const v = { ...rows.get(id)!, cat: Math.floor(r() * 100) };
        rows.set(id, v);
        await store.put('g.items', { id, ...v });
      } else if (kind === 2) {
        const nid = `x${step}`;
        const v = { cat: 1, links: [id] };
        rows.set(nid, v);
        rows.get(id)!.links.push(nid);
        await store.commit({ changes: [{ op: 'put', schema: 'g.items', row: { id: nid, ...v } }, { op: 'put', schema: 'g.items', row: { id, ...rows.get(id)! } }] });
      } else {
        rows.delete(id);
        await store.delete('g.items', [id]);
      }
      // each source twice: the first after the write (the cache refills), the second warm
      for (const src of [id, 'n0', `n${Math.floor(r() * N)}`]) {
        expect(await got(src, 60)).toEqual(expected(src, 60));
        expect(await got(src, 60)).toEqual(expected(src, 60));
      }
    }
  });
});
