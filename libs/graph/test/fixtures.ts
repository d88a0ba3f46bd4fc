/** Shared helpers of the graph integration tests: a real store in a temp dir, ca-GrQc read in place. */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { TenantStore } from '@mmdb/storage';
import { GraphIndex } from '../src';

export const GRQC = path.resolve(__dirname, '../../../../shared/datasets/graph/CA-GrQc.txt');

/** ca-GrQc edges: skip line 1 (the "nodes<TAB>edges" header), then "from<TAB>to". */
export function readGrQc(): Array<[string, string]> {
  const lines = fs.readFileSync(GRQC, 'utf8').split('\n');
  const out: Array<[string, string]> = [];
  for (let i = 1; i < lines.length; i++) {
    const l = lines[i].trim();
    if (!l) continue;
    const [a, b] = l.split('\t');
    out.push([a, b]);
  }
  return out;
}

/** A deterministic weight 1..9 per directed edge (the reference uses the same function). */
export function weightOf(a: string, b: string): number {
  return ((Number(a) * 31 + Number(b) * 17) % 9) + 1;
}

export async function openStore(dir: string): Promise<{ store: TenantStore; graph: GraphIndex }> {
  const graph = new GraphIndex();
  const store = await TenantStore.open({ dir, participants: [graph], sync: false });
  return { store, graph };
}

export function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'graph-test-'));
}

export const AUTHORS_TOML = `
namespace = "grqc"
table = "authors"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
`;

export const EDGES_TOML = `
namespace = "grqc"
table = "edges"
primary_key = ["src", "dst"]
[[columns]]
name = "src"
ty = "i64"
required = true
[[columns]]
name = "dst"
ty = "i64"
required = true
[[columns]]
name = "w"
ty = "f64"
[[relations]]
name = "coauthor"
source = "grqc.authors"
source_columns = ["src"]
target = "grqc.authors"
columns = ["dst"]
weight = "w"
`;

/** Reference: adjacency lists from the raw edge list. */
export function refAdjacency(edges: Array<[string, string]>): Map<string, string[]> {
  const adj = new Map<string, string[]>();
  for (const [a, b] of edges) {
    let l = adj.get(a);
    if (!l) adj.set(a, (l = []));
    if (!l.includes(b)) l.push(b);
  }
  return adj;
}

/** Reference BFS: node → least hop count, within maxDepth. */
export function refBfs(adj: Map<string, string[]>, src: string, maxDepth: number): Map<string, number> {
  const depth = new Map<string, number>([[src, 0]]);
  let frontier = [src];
  for (let d = 1; d <= maxDepth && frontier.length; d++) {
    const next: string[] = [];
    for (const u of frontier) {
      for (const v of adj.get(u) ?? []) {
        if (!depth.has(v)) {
          depth.set(v, d);
          next.push(v);
        }
      }
    }
    frontier = next;
  }
  return depth;
}

/** Reference Dijkstra, O(V^2) with a linear scan for the next node: plain and independent. */
export function refDijkstra(adj: Map<string, string[]>, w: (a: string, b: string) => number, src: string, dst: string): number | null {
  const dist = new Map<string, number>([[src, 0]]);
  const done = new Set<string>();
  for (;;) {
    let best: string | undefined;
    let bd = Infinity;
    for (const [k, v] of dist) if (!done.has(k) && v < bd) {
        best = k;
        bd = v;
      }
    if (best === undefined) return null;
    if (best === dst) return bd;
    done.add(best);
    for (const v of adj.get(best) ?? []) {
      const nd = bd + w(best, v);
      if (nd < (dist.get(v) ?? Infinity)) dist.set(v, nd);
    }
  }
}
