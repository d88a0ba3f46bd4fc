/**
 * The benchmark's synthetic corpus: rows with text, a 128-d vector, a category and a relation;
 * exact ground truth. Compact so that 1,000,000 rows fit: vectors in one Float32Array, categories
 * in a Uint16Array; the row objects (text, links) exist only while their NDJSON line is written.
 */
import { rng } from '@mmdb/vector';

const WORDS = 'river stone light glass ember quiet north signal harbor orbit cedar lantern copper meadow summit echo velvet prism canyon drift'.split(' ');

export interface Corpus {
  readonly n: number;
  readonly dim: number;
  /** Row i's vector at [i·dim, (i+1)·dim): the values the row was written with (4 decimals, exact in JSON). */
  readonly emb: Float32Array;
  readonly cat: Uint16Array;
}

/**
 * The corpus and a generator of its rows' JSON lines (in id order: `r<i>`, a category 0..999 —
 * `cat < 100` is 10% —, 6–15 words, a vector near one of 32 centers, two links). The arrays are
 * filled as the lines are drawn: draw them all before reading `emb` / `cat`.
 */
export function makeCorpus(n: number, dim: number, seed = 7): { corpus: Corpus; lines: Generator<string> } {
  const r = rng(seed);
  const centers = Array.from({ length: 32 }, () => Array.from({ length: dim }, () => r() * 2 - 1));
  const emb = new Float32Array(n * dim);
  const cat = new Uint16Array(n);
  function* lines(): Generator<string> {
    const v = new Array<number>(dim);
    for (let i = 0; i < n; i++) {
      const c = centers[i % centers.length];
      for (let d = 0; d < dim; d++) v[d] = Math.round((c[d] + (r() - 0.5) * 0.6) * 1e4) / 1e4;
      const words = Array.from({ length: 6 + Math.floor(r() * 10) }, () => WORDS[Math.floor(r() * r() * WORDS.length)]);
      const links = [Math.floor(r() * n), Math.floor(r() * n)].filter((j) => j !== i).map((j) => `r${j}`);
      cat[i] = Math.floor(r() * 1000);
      emb.set(v, i * dim);
      yield JSON.stringify({ id: `r${i}`, cat: cat[i], body: words.join(' '), emb: v, links });
    }
  }
  return { corpus: { n, dim, emb, cat }, lines: lines() };
}

export function vectorOf(c: Corpus, i: number): number[] {
  return Array.from(c.emb.subarray(i * c.dim, (i + 1) * c.dim), (x) => Math.round(x * 1e4) / 1e4);
}

export function queries(c: Corpus, q: number, seed = 11): number[][] {
  const r = rng(seed);
  return Array.from({ length: q }, () => vectorOf(c, Math.floor(r() * c.n)).map((x) => x + (r() - 0.5) * 0.1));
}

/** The exact 10 nearest ids (l2; ties by id) among the rows whose cat < catBelow. */
export function truth(c: Corpus, q: number[], catBelow: number, k = 10): string[] {
  const best: Array<{ i: number; d: number }> = [];
  const dim = c.dim;
  const e = c.emb;
  for (let i = 0; i < c.n; i++) {
    if (c.cat[i] >= catBelow) continue;
    let s = 0;
    const o = i * dim;
    for (let j = 0; j < dim; j++) {
      const x = q[j] - e[o + j];
      s += x * x;
    }
    if (best.length === k && s > best[k - 1].d) continue;
    best.push({ i, d: s });
    best.sort((a, b) => a.d - b.d || (`r${a.i}` < `r${b.i}` ? -1 : 1));
    if (best.length > k) best.pop();
  }
  return best.map((x) => `r${x.i}`);
}

/**
 * The exact RRF (k = 60) top-`limit` of two rankings, first input first on ties (the fuse node's
 * order), and every id whose fused score equals the last one's: an answer holding any of those in
 * the last places is as right as `want` (a tie at the cut is either side's to break).
 */
export function exactRrf(a: readonly string[], b: readonly string[], limit = 10): { want: string[]; accept: Set<string> } {
  const s = new Map<string, number>();
  for (const list of [a, b]) list.forEach((id, r) => s.set(id, (s.get(id) ?? 0) + 1 / (61 + r)));
  const all = [...s].sort((x, y) => y[1] - x[1]);
  const want = all.slice(0, limit).map(([id]) => id);
  const last = all[Math.min(limit, all.length) - 1]?.[1] ?? 0;
  return { want, accept: new Set([...want, ...all.filter(([, v]) => Math.abs(v - last) < 1e-12).map(([id]) => id)]) };
}

/** Share of `want` an answer holds, counting ids of `accept` (ties at the cut) as held. */
export function recallWithTies(got: readonly string[], want: readonly string[], accept: ReadonlySet<string>): number {
  if (want.length === 0) return 1;
  return Math.min(want.length, got.filter((x) => accept.has(x)).length) / want.length;
}

export function recall(got: string[], want: string[]): number {
  if (want.length === 0) return 1;
  const w = new Set(want);
  return got.filter((x) => w.has(x)).length / want.length;
}

export function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
}

export const manifest = (dim: number) => `namespace = "bench"
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
name = "body"
ty = "str"
required = true
[[columns]]
name = "emb"
ty = "vector"
dim = ${dim}
[[columns]]
name = "links"
ty = "json"
[vector]
column = "emb"
dim = ${dim}
metric = "l2"
[[fulltext]]
field = "body"
[[relations]]
name = "links"
target = "bench.items"
columns = ["links"]
`;

/** The RRF line's text queries (one per statement, in turn). */
export const QUERY_WORDS = ['river stone', 'ember signal', 'copper lantern', 'quiet harbor'];

/** The BM25 + vector RRF top-10 joined to its rows ($1 the query vector, $2 the text). */
export const RRF_SQL = `SELECT r.id, r.cat, r.body, f._score FROM (SELECT id, _score FROM rrf((SELECT id FROM bench.items ORDER BY emb <-> $1 LIMIT 20), (SELECT id FROM fts_search('bench.items', 'body', $2, 20, 'bm25')), 'id') LIMIT 10) f JOIN bench.items r ON r.id = f.id ORDER BY f._score DESC`;

/** The two-hop expansion joined to rows with a filter ($1 the start node). */
export const HOP_SQL = `SELECT r.id, r.cat FROM graph_expand('bench.items', 'links', $1, 1, 2) g JOIN bench.items r ON r.id = g._node WHERE r.cat < 500`;

