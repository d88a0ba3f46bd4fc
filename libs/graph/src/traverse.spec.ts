import { DbError } from '@mmdb/core';
import { Adjacency } from './adjacency';
import { bfs, dijkstra, scratchBytes, shortestPath } from './traverse';
import { walk } from './walk';

// A seeded generator so failures reproduce.
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function randomGraph(n: number, m: number, seed: number): Array<[string, string, number]> {
  const r = rng(seed);
  const edges = new Map<string, [string, string, number]>();
  while (edges.size < m) {
    const a = `n${Math.floor(r() * n)}`;
    const b = `n${Math.floor(r() * n)}`;
    if (a === b) continue;
    edges.set(`${a}>${b}`, [a, b, Math.floor(r() * 10) + 1]);
  }
  return [...edges.values()];
}

// Reference computations, written plainly over an edge list.
function refDepths(edges: Array<[string, string, number]>, src: string, maxDepth: number): Map<string, number> {
  const depth = new Map<string, number>([[src, 0]]);
  let frontier = [src];
  for (let d = 1; d <= maxDepth; d++) {
    const next: string[] = [];
    for (const u of frontier) for (const [a, b] of edges) if (a === u && !depth.has(b)) {
          depth.set(b, d);
          next.push(b);
        }
    frontier = next;
  }
  return depth;
}

function refDijkstra(edges: Array<[string, string, number]>, src: string, dst: string): number | null {
  const dist = new Map<string, number>([[src, 0]]);
  const done = new Set<string>();
  for (;;) {
    let best: string | undefined;
    for (const [k, v] of dist) if (!done.has(k) && (best === undefined || v < dist.get(best)!)) best = k;
    if (best === undefined) return null;
    if (best === dst) return dist.get(best)!;
    done.add(best);
    for (const [a, b, w] of edges) {
      if (a !== best) continue;
      const nd = dist.get(best)! + w;
      if (!dist.has(b) || nd < dist.get(b)!) dist.set(b, nd);
    }
  }
}

function build(edges: Array<[string, string, number]>): Adjacency {
  const a = new Adjacency();
  for (const [src, dst, weight] of edges) a.put({ src, dst, owner: null, weight });
  return a;
}

/** The same edges held three ways: all in the overlay, all in the CSR base, and mixed (base with tombstones + overlay). */
const layouts: Array<[string, (edges: Array<[string, string, number]>) => Adjacency]> = [
  ['overlay only', build],
  [
    'compacted base',
    (edges) => {
      const a = build(edges);
      a.compact();
      return a;
    },
  ],
  [
    'base with tombstones + overlay',
    (edges) => {
      const a = new Adjacency();
      const half = edges.length >> 1;
      for (const [src, dst, weight] of edges.slice(0, half)) a.put({ src, dst, owner: null, weight });
      for (const [src, dst] of edges.slice(half)) a.put({ src, dst, owner: null, weight: 99 }); // wrong weight, fixed below
      a.compact();
      // remove a third of the base and put it back (now in the overlay); fix the weights in place
      for (const [src, dst] of edges.slice(0, half).filter((_, i) => i % 3 === 0)) a.remove(src, dst, null);
      for (const [src, dst, weight] of edges.slice(0, half).filter((_, i) => i % 3 === 0)) a.put({ src, dst, owner: null, weight });
      for (const [src, dst, weight] of edges.slice(half)) a.put({ src, dst, owner: null, weight });
      expect(a.compactions).toBe(1);
      return a;
    },
  ],
];

describe.each(layouts)('traversals against reference computations (%s)', (_name, layout) => {
  const edges = randomGraph(300, 900, 7);
  const adj = layout(edges);

  it('bfs visits exactly the nodes within depth, each at its shortest depth, in non-decreasing depth order', () => {
    for (const src of ['n0', 'n17', 'n123', 'n299']) {
      for (const depth of [0, 1, 2, 3, 5]) {
        const got = bfs(adj, src, depth);
        expect(got[0]).toEqual({ node: src, depth: 0 });
        const want = refDepths(edges, src, depth);
        expect(new Map(got.map((v) => [v.node, v.depth]))).toEqual(want);
        expect(got.length).toBe(want.size);
        for (let i = 1; i < got.length; i++) expect(got[i].depth).toBeGreaterThanOrEqual(got[i - 1].depth);
      }
    }
  });

  it('shortestPath finds a path of minimal hop count made of real edges, within max_depth', () => {
    const set = new Set(edges.map(([a, b]) => `${a}>${b}`));
    const all = refDepths(edges, 'n5', 100);
    for (const dst of ['n1', 'n50', 'n77', 'n250', 'n5']) {
      const p = shortestPath(adj, 'n5', dst, 100);
      if (!all.has(dst)) {
        expect(p).toBeNull();
        continue;
      }
      expect(p).not.toBeNull();
      expect(p!.length - 1).toBe(all.get(dst));
      for (let i = 1; i < p!.length; i++) expect(set.has(`${p![i - 1]}>${p![i]}`)).toBe(true);
      if (all.get(dst)! > 1) expect(shortestPath(adj, 'n5', dst, all.get(dst)! - 1)).toBeNull();
    }
  });

  it('dijkstra matches a reference total, and its path sums to it', () => {
    const w = new Map(edges.map(([a, b, x]) => [`${a}>${b}`, x]));
    const weight = adj.weights();
    for (const [s, d] of [
      ['n0', 'n1'],
      ['n3', 'n200'],
      ['n42', 'n7'],
      ['n299', 'n0'],
    ]) {
      const want = refDijkstra(edges, s, d);
      const got = dijkstra(adj, s, d, weight);
      expect(got.total_weight).toBe(want);
      if (want === null) expect(got.path).toEqual([]);
      else {
        let sum = 0;
        for (let i = 1; i < got.path.length; i++) sum += w.get(`${got.path[i - 1]}>${got.path[i]}`)!;
        expect(sum).toBe(want);
        expect(got.path[0]).toBe(s);
        expect(got.path[got.path.length - 1]).toBe(d);
      }
    }
  });

  it('dijkstra: missing weight counts 1, negative weight is refused, unknown ends are unreachable', () => {
    const a = new Adjacency();
    a.put({ src: 'a', dst: 'b', owner: null });
    a.put({ src: 'b', dst: 'c', owner: null });
    a.put({ src: 'a', dst: 'c', owner: null, weight: 5 });
    expect(dijkstra(a, 'a', 'c', a.weights())).toEqual({ path: ['a', 'b', 'c'], total_weight: 2 });
    expect(dijkstra(a, 'a', 'zz', () => 1)).toEqual({ path: [], total_weight: null });
    expect(dijkstra(a, 'a', 'a', () => 1)).toEqual({ path: ['a'], total_weight: 0 });
    expect(() => dijkstra(a, 'a', 'c', () => -1)).toThrow(DbError);
    expect(() => dijkstra(a, 'a', 'c', () => Infinity)).toThrow(/weight/);
  });

  it('bfs from a node with no edges returns only the source', () => {
    expect(bfs(adj, 'not-a-node', 3)).toEqual([{ node: 'not-a-node', depth: 0 }]);
  });
});

describe('traversal scratch memory (issue 25 §7)', () => {
  it('a BFS or walk holds a bit a node plus arrays sized to what it visited, not 24 bytes a node; a long walk grows them and answers right', () => {
    // 200,000 nodes on a ring with chords: a depth-3 BFS visits a handful, an unbounded one all
    const n = 200_000;
    const adj = new Adjacency();
    for (let i = 0; i < n; i++) {
      adj.append({ src: `v${i}`, dst: `v${(i + 1) % n}`, owner: null, weight: 1 });
      if (i % 1000 === 0) adj.append({ src: `v${i}`, dst: `v${(i * 7919) % n}`, owner: null, weight: 1 });
    }
    adj.compact();
    expect(bfs(adj, 'v5', 3).map((v) => v.node)).toEqual(['v5', 'v6', 'v7', 'v8']);
    // the visited bits (n / 8 bytes) and three queues of 1,024 ints; sized to the graph they were 24 B a node (4.8 MB)
    expect(scratchBytes(adj)).toBeLessThan(n / 8 + 64 + 3 * 4 * 1024);
    const all = walk(adj, 'v0', { direction: 'forward', maxDepth: Infinity, startSeen: true })!;
    expect(all.length).toBe(n);
    expect(new Set(all.ids).size).toBe(n);
    for (let k = 1; k < all.length; k++) expect(all.depths[k]).toBeGreaterThanOrEqual(all.depths[k - 1]);
    expect(bfs(adj, 'v0', n).length).toBe(n);
    // after the long walks the bits are clear again: a short BFS answers as before
    expect(bfs(adj, 'v5', 3).map((v) => v.node)).toEqual(['v5', 'v6', 'v7', 'v8']);
    // the per-node arrays come with the first path query only
    expect(shortestPath(adj, 'v0', 'v5', 10)).toEqual(['v0', 'v1', 'v2', 'v3', 'v4', 'v5']);
    expect(scratchBytes(adj)).toBeGreaterThan(16 * n);
  });
});
