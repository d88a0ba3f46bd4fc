import { Adjacency } from './adjacency';
import { bfs, shortestPath } from './traverse';
import { walk, walkNames, type WalkDirection } from './walk';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** A graph with a compacted base (some edges removed: tombstones) and an overlay (puts and removes after it). */
function graph(n: number, m: number, seed: number): Adjacency {
  const r = rng(seed);
  const adj = new Adjacency();
  const pick = () => `n${Math.floor(r() * n)}`;
  for (let i = 0; i < m; i++) adj.put({ src: pick(), dst: pick(), owner: null, weight: 1 });
  adj.compact();
  for (let i = 0; i < m / 4; i++) adj.remove(pick(), pick(), null);
  for (let i = 0; i < m / 3; i++) adj.put({ src: pick(), dst: pick(), owner: null, weight: 1 });
  for (let i = 0; i < m / 10; i++) adj.remove(pick(), pick(), null);
  return adj;
}

/** The executor's walk before it moved to ids: node strings, a Set and a Map (kept here as the reference). */
function reference(adj: Adjacency, dir: WalkDirection, start: string, max: number, startSeen: boolean, visible?: (s: string) => boolean): [string, number, string][] {
  const all = dir === 'forward' ? (x: string) => adj.neighbors(x) : dir === 'reverse' ? (x: string) => adj.sources(x) : (x: string) => [...new Set([...adj.neighbors(x), ...adj.sources(x)])];
  const next = visible ? (x: string) => all(x).filter(visible) : all;
  const out: [string, number, string][] = [];
  const parent = new Map<string, string | null>([[start, null]]);
  const seen = new Set<string>(startSeen ? [start] : []);
  const pathTo = (via: string | null, node: string) => {
    const p = [node];
    for (let x = via; x !== null; x = parent.get(x) ?? null) p.push(x);
    return JSON.stringify(p.reverse());
  };
  out.push([start, 0, pathTo(null, start)]);
  let frontier = [start];
  for (let d = 1; d <= max && frontier.length; d++) {
    const nf: string[] = [];
    for (const u of frontier) for (const v of next(u)) {
      if (seen.has(v)) continue;
      seen.add(v);
      if (v !== start) parent.set(v, u);
      out.push([v, d, pathTo(u, v)]);
      if (v !== start) nf.push(v);
    }
    frontier = nf;
  }
  return out;
}

function records(adj: Adjacency, dir: WalkDirection, start: string, max: number, startSeen: boolean, visible?: (s: string) => boolean): [string, number, string][] | null {
  const w = walk(adj, start, { direction: dir, maxDepth: max, startSeen, ...(visible ? { pass: (id: number) => visible(adj.name(id)) } : {}) });
  if (!w) return null;
  const out: [string, number, string][] = [];
  for (let k = 0; k < w.length; k++) {
    const p: string[] = [];
    for (let x = k; x >= 0; x = w.vias[x]) p.push(adj.name(w.ids[x]));
    out.push([adj.name(w.ids[k]), w.depths[k], JSON.stringify(p.reverse())]);
  }
  return out;
}

describe('walk (graph_expand over ids)', () => {
  it('visits what the string walk visited, in its order, with its depths and paths (every direction, cycles, hidden nodes)', () => {
    for (let seed = 1; seed <= 6; seed++) {
      const adj = graph(40, 120, seed);
      const hidden = (s: string) => Number(s.slice(1)) % 7 !== 3;
      for (const dir of ['forward', 'reverse', 'both'] as const) {
        for (const max of [0, 1, 2, 3, Infinity]) {
          for (const startSeen of [true, false]) {
            for (let i = 0; i < 40; i += 3) {
              const s = `n${i}`;
              if (adj.idOf(s) === undefined) {
                expect(records(adj, dir, s, max, startSeen)).toBeNull();
                continue;
              }
              expect([seed, dir, max, startSeen, s, records(adj, dir, s, max, startSeen)]).toEqual([seed, dir, max, startSeen, s, reference(adj, dir, s, max, startSeen)]);
              expect(records(adj, dir, s, max, startSeen, hidden)).toEqual(reference(adj, dir, s, max, startSeen, hidden));
            }
          }
        }
      }
    }
  });

  it('reports each level to onLevel, and leaves no visited mark behind when it throws', () => {
    const adj = graph(60, 240, 9);
    const levels: number[] = [];
    const w = walk(adj, 'n1', { direction: 'forward', maxDepth: Infinity, startSeen: true, onLevel: (_d, size) => levels.push(size) })!;
    expect(levels.reduce((a, b) => a + b, 0)).toBe(w.length - 1);
    expect(levels[levels.length - 1]).toBe(0);
    const want = bfs(adj, 'n2', 5);
    expect(() => walk(adj, 'n1', { direction: 'both', maxDepth: Infinity, startSeen: true, onLevel: (d) => { if (d === 2) throw new Error('budget'); } })).toThrow('budget');
    // the bitset is clean: later walks and traversals see every node again
    expect(bfs(adj, 'n2', 5)).toEqual(want);
    expect(records(adj, 'forward', 'n1', Infinity, true)).toEqual(reference(adj, 'forward', 'n1', Infinity, true));
    expect(shortestPath(adj, 'n1', 'n2', 64)).toEqual(shortestPath(adj, 'n1', 'n2', 64));
  });
});

describe('walkNames', () => {
  it('names every record of a walk as adj.name does, in any order of asking, across chunks of 256; names() of a node list likewise', () => {
    const adj = new Adjacency();
    // names of several lengths (the short-name cases and longer ones), non-ASCII among them
    const name = (i: number) => (i % 5 === 0 ? `nœud-${i}-${'x'.repeat(i % 13)}` : `v${i}`);
    for (let i = 0; i < 3000; i++) {
      adj.append({ src: name(i), dst: name((i * 7 + 1) % 3000), owner: null, weight: 1 });
      adj.append({ src: name(i), dst: name((i + 1) % 3000), owner: null, weight: 1 });
    }
    adj.compact();
    const w = walk(adj, name(0), { direction: 'forward', maxDepth: Infinity, startSeen: true })!;
    expect(w.length).toBe(3000);
    const names = walkNames(adj, w.ids, w.length);
    for (const k of [w.length - 1, 0, 300, 255, 256, 511, 1, w.length - 2]) expect(names(k)).toBe(adj.name(w.ids[k]));
    for (let k = 0; k < w.length; k++) expect(names(k)).toBe(adj.name(w.ids[k]));
    expect(adj.names(w.ids, w.length)).toEqual(Array.from(w.ids, (id) => adj.name(id)));
    expect(adj.names(w.ids, 0)).toEqual([]);
  });
});
