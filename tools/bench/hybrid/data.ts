/** The benchmark's synthetic corpus: rows with text, a 128-d vector, a category and a relation; exact ground truth. */
import { rng } from '@mmdb/vector';

export interface Item { id: string; cat: number; body: string; emb: number[]; links: string[] }

const WORDS = 'river stone light glass ember quiet north signal harbor orbit cedar lantern copper meadow summit echo velvet prism canyon drift'.split(' ');

export function makeItems(n: number, dim: number, seed = 7): Item[] {
  const r = rng(seed);
  const centers = Array.from({ length: 32 }, () => Array.from({ length: dim }, () => r() * 2 - 1));
  const out: Item[] = [];
  for (let i = 0; i < n; i++) {
    const c = centers[i % centers.length];
    const emb = c.map((x) => Math.round((x + (r() - 0.5) * 0.6) * 1e4) / 1e4);
    const words = Array.from({ length: 6 + Math.floor(r() * 10) }, () => WORDS[Math.floor(r() * r() * WORDS.length)]);
    const links = [Math.floor(r() * n), Math.floor(r() * n)].filter((j) => j !== i).map((j) => `r${j}`);
    out.push({ id: `r${i}`, cat: Math.floor(r() * 1000), body: words.join(' '), emb, links });
  }
  return out;
}

export function queries(items: Item[], q: number, seed = 11): number[][] {
  const r = rng(seed);
  return Array.from({ length: q }, () => items[Math.floor(r() * items.length)].emb.map((x) => x + (r() - 0.5) * 0.1));
}

const l2 = (a: number[], b: number[]) => { let s = 0; for (let i = 0; i < a.length; i++) { const d = a[i] - b[i]; s += d * d; } return s; };

/** The exact 10 nearest ids (l2) among the items whose cat < catBelow. */
export function truth(items: Item[], q: number[], catBelow: number, k = 10): string[] {
  const pass = items.filter((it) => it.cat < catBelow).map((it) => ({ id: it.id, d: l2(q, it.emb) }));
  pass.sort((a, b) => a.d - b.d || (a.id < b.id ? -1 : 1));
  return pass.slice(0, k).map((x) => x.id);
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
