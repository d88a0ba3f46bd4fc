/** BM25 as Elasticsearch 7 scores it (LegacyBM25Similarity: k1 1.2, b 0.75, Lucene's idf and norm quantization). */
import type { Doc, FieldStats, IndexView } from './doc';

const K1 = 1.2;
const B = 0.75;

function longToInt4(i: number): number {
  const numBits = i === 0 ? 0 : Math.floor(Math.log2(i)) + 1;
  if (numBits < 4) return i;
  const shift = numBits - 4;
  let encoded = Math.floor(i / 2 ** shift);
  encoded &= 0x07;
  encoded |= (shift + 1) << 3;
  return encoded;
}
function int4ToLong(i: number): number {
  const bits = i & 0x07;
  const shift = (i >>> 3) - 1;
  return shift === -1 ? bits : (bits | 0x08) * 2 ** shift;
}
const NUM_FREE = 255 - longToInt4(2147483647);
/** The document length Lucene stores in its one-byte norm (exact below 24). */
export function quantizedLength(len: number): number {
  const enc = len < NUM_FREE ? len : NUM_FREE + longToInt4(len - NUM_FREE);
  return enc < NUM_FREE ? enc : NUM_FREE + int4ToLong(enc - NUM_FREE);
}

const ASCII_TOKEN = /^[a-z0-9']+$/;

/** Field statistics over every document of the index (docCount, total length, document frequencies). */
export function fieldStats(ix: IndexView, path: string, analyzer: string): FieldStats {
  const last = lastStats.get(ix);
  if (last && last.path === path && last.analyzer === analyzer && ix.stats.get(last.key) === last.s) return last.s;
  const k = `${path}\u0000${analyzer}`;
  let s = ix.stats.get(k);
  if (!s) {
    s = { docCount: 0, sumLen: 0, df: new Map(), maxLen: 0, asciiTokens: true };
    for (const d of ix.docs) {
      const terms = d.terms(path, analyzer);
      if (terms.length === 0) continue;
      s.docCount++;
      if (!s.multiValued && d.valueCount(path, analyzer) > 1) s.multiValued = true;
      const len = d.length(path, analyzer);
      s.sumLen += len;
      if (len > s.maxLen) s.maxLen = len;
      for (const t of terms) {
        const n = s.df.get(t);
        if (n === undefined && !ASCII_TOKEN.test(t)) s.asciiTokens = false;
        s.df.set(t, (n ?? 0) + 1);
      }
    }
    ix.stats.set(k, s);
  }
  lastStats.set(ix, { path, analyzer, key: k, s });
  return s;
}

/** The last statistics asked of a view (a query asks the same field for every document). */
const lastStats = new WeakMap<IndexView, { path: string; analyzer: string; key: string; s: FieldStats }>();

export function idf(docCount: number, df: number): number {
  return Math.log(1 + (docCount - df + 0.5) / (df + 0.5));
}

/** BM25 of `freq` occurrences with term-set idf `w` in doc `d`; `norms: false` (keyword) ignores length. */
export function bm25(w: number, freq: number, d: Doc, path: string, analyzer: string, stats: FieldStats, norms = true): number {
  if (freq <= 0) return 0;
  const avgdl = stats.docCount ? stats.sumLen / stats.docCount : 1;
  const dl = norms ? quantizedLength(d.length(path, analyzer)) : avgdl;
  const normB = norms ? 1 - B + (B * dl) / avgdl : 1;
  return Math.fround(w * (K1 + 1) * (freq / (freq + K1 * normB)));
}

/** Score of one term of a field in a doc (0 when absent). */
export function termScore(ix: IndexView, d: Doc, path: string, analyzer: string, term: string, boost: number, norms = true): number {
  const freq = d.freq(path, analyzer, term);
  if (!freq) return 0;
  const st = fieldStats(ix, path, analyzer);
  return boost * bm25(idf(st.docCount, st.df.get(term) ?? 0), freq, d, path, analyzer, st, norms);
}
