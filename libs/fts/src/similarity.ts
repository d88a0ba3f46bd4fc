/**
 * BM25 as Lucene defines its idf: idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5)), and the
 * classic saturation tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl)).
 * N is the field's document count, avgdl its total length over N.
 */
export interface Bm25Params {
  readonly k1: number;
  readonly b: number;
}

export const DEFAULT_BM25: Bm25Params = { k1: 1.2, b: 0.75 };

export function idf(docCount: number, docFreq: number): number {
  return Math.log(1 + (docCount - docFreq + 0.5) / (docFreq + 0.5));
}

export function bm25(idfValue: number, tf: number, dl: number, avgdl: number, p: Bm25Params): number {
  return (idfValue * tf * (p.k1 + 1)) / (tf + p.k1 * (1 - p.b + (p.b * dl) / avgdl));
}
