/**
 * ca-GrQc loaded through the store's row API (an edge table), traversals checked
 * against reference computations over the raw edge list, before and after a restart.
 */
import * as fs from 'fs';
import type { TenantStore } from '@mmdb/storage';
import type { GraphIndex } from '../src';
import { AUTHORS_TOML, EDGES_TOML, openStore, readGrQc, refAdjacency, refBfs, refDijkstra, tempDir, weightOf } from './fixtures';

const S = 'grqc.edges';
const R = 'coauthor';

describe('graph over ca-GrQc', () => {
  const raw = readGrQc();
  const ref = refAdjacency(raw);
  const nodes = [...ref.keys()].sort();
  // Sample sources spread over the node list (deterministic).
  const sample = (k: number, salt: number) => Array.from({ length: k }, (_, i) => nodes[(i * 7919 + salt * 104729) % nodes.length]);
  let dir: string;
  let store: TenantStore;
  let graph: GraphIndex;

  beforeAll(async () => {
    dir = tempDir();
    ({ store, graph } = await openStore(dir));
    await store.registerSchema(AUTHORS_TOML);
    await store.registerSchema(EDGES_TOML);
    for (let i = 0; i < raw.length; i += 2000) {
      const changes = raw.slice(i, i + 2000).map(([a, b]) => ({
        op: 'put' as const,
        schema: S,
        row: { src: Number(a), dst: Number(b), w: weightOf(a, b) },
      }));
      await store.commit({ changes });
    }
  }, 60_000);

  afterAll(async () => {
    await store?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('skips the header line and loads every edge', () => {
    expect(raw[0]).toEqual(['3466', '937']);
    expect(raw.length).toBe(28980);
  });

  it('neighbors equal the raw edge list for every node', async () => {
    for (const n of nodes) {
      const got = await graph.neighbors(S, R, n);
      expect(got.sort()).toEqual([...ref.get(n)!].sort());
    }
    expect(await graph.neighbors(S, R, 'no-such-node')).toEqual([]);
  });

  it('bfs at depths 0..4 visits the reference node set at the reference depths, source first, depths non-decreasing', async () => {
    for (const src of sample(25, 1)) {
      for (const depth of [0, 1, 3, 4]) {
        const got = await graph.bfs(S, R, src, depth);
        expect(got[0]).toEqual({ node: src, depth: 0 });
        for (let i = 1; i < got.length; i++) expect(got[i].depth).toBeGreaterThanOrEqual(got[i - 1].depth);
        const want = refBfs(ref, src, depth);
        expect(got.length).toBe(want.size);
        expect(new Map(got.map((v) => [v.node, v.depth]))).toEqual(want);
      }
    }
  });

  it('the request on the source table reaches the relation declared on the edge table', async () => {
    const src = nodes[0];
    expect((await graph.neighbors('grqc.authors', R, src)).sort()).toEqual([...ref.get(src)!].sort());
  });

  it('path is a fewest-hops path of real edges, and respects max_depth', async () => {
    const srcs = sample(8, 2);
    const dsts = sample(8, 3);
    for (let i = 0; i < srcs.length; i++) {
      const all = refBfs(ref, srcs[i], 64);
      const res = await graph.path(S, R, srcs[i], dsts[i], 64);
      expect(res.reachable).toBe(all.has(dsts[i]));
      if (!res.reachable) {
        expect(res.path).toEqual([]);
        continue;
      }
      expect(res.path.length - 1).toBe(all.get(dsts[i]));
      for (let k = 1; k < res.path.length; k++) expect(ref.get(res.path[k - 1])).toContain(res.path[k]);
      const hops = all.get(dsts[i])!;
      if (hops > 1) expect((await graph.path(S, R, srcs[i], dsts[i], hops - 1)).reachable).toBe(false);
    }
  });

  it('dijkstra over the weight column matches a reference Dijkstra, and its path sums to the total', async () => {
    const srcs = sample(3, 4);
    const dsts = sample(3, 5);
    for (let i = 0; i < srcs.length; i++) {
      const want = refDijkstra(ref, weightOf, srcs[i], dsts[i]);
      const got = await graph.dijkstra(S, R, srcs[i], dsts[i]);
      expect(got.total_weight).toBe(want);
      if (want === null) continue;
      let sum = 0;
      for (let k = 1; k < got.path.length; k++) sum += weightOf(got.path[k - 1], got.path[k]);
      expect(sum).toBe(want);
    }
  });

  it('dijkstra: weights_json overrides, an unreachable pair gives an empty path and null', async () => {
    const [a] = sample(1, 6);
    const b = ref.get(a)![0];
    // Making the direct edge free must make the total 0.
    const got = await graph.dijkstra(S, R, a, b, { weights: { [`${a}|${b}`]: 0 } });
    expect(got).toEqual({ path: [a, b], total_weight: 0 });
    expect(await graph.dijkstra(S, R, a, 'nowhere')).toEqual({ path: [], total_weight: null });
    await expect(graph.dijkstra(S, R, a, b, { weights: { [`${a}|${b}`]: -1 } })).rejects.toMatchObject({ code: 'validation_failed' });
  });

  it('store.verify finds every edge key derived from the rows', async () => {
    const rep = await store.verify();
    expect(rep.differences).toEqual([]);
    expect(rep.ok).toBe(true);
    expect(rep.derivedKeys).toBeGreaterThanOrEqual(2 * raw.length);
  });

  it('after a restart, traversals give the same answers (adjacency rebuilt from the stored edges)', async () => {
    const srcs = sample(10, 7);
    const before = await Promise.all(srcs.map((s) => graph.bfs(S, R, s, 3)));
    await store.close();
    ({ store, graph } = await openStore(dir));
    for (let i = 0; i < srcs.length; i++) {
      const after = await graph.bfs(S, R, srcs[i], 3);
      expect(new Map(after.map((v) => [v.node, v.depth]))).toEqual(new Map(before[i].map((v) => [v.node, v.depth])));
      expect(new Map(after.map((v) => [v.node, v.depth]))).toEqual(refBfs(ref, srcs[i], 3));
    }
  }, 30_000);
});
