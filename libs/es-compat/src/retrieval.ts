/**
 * Full-text retrieval through plans: the text terms a search looks up are fetched by an
 * `fts_search` plan node over the index's text column (postings written in the row's frame),
 * on the shared executor. The ids it returns are a superset of the documents holding the terms
 * (its analyzer splits and folds at least as finely as Elasticsearch's, and keeps every word);
 * the Elasticsearch scoring then runs over those documents only. When the column's analyzer is
 * not such a superset, or the node's limit is reached, the search falls back to the whole view.
 */
import { col, ftsSearch, project } from '@mmdb/plan';
import type { IndexView } from './doc';
import type { IndexRef } from './indices';
import type { EsBackend } from './port';
import { fieldStats } from './scoring';

export interface TextRequest { readonly path: string; readonly analyzer: string; readonly terms: readonly string[] }

/** Answers, per index view, the ids holding any of the terms (undefined: not retrieved, use the view). */
export interface Retrieval {
  ids(ix: IndexView, path: string, analyzer: string, terms: readonly string[]): Set<string> | undefined;
  /** Records a lookup the candidate pass wants (collect mode). */
  want?(ix: IndexView, req: TextRequest): void;
}

const FTS_LIMIT = 1000;
/** Terms the fts lib's analyzers read as one word (they split on `_` and `.`; an apostrophe is dropped on both sides). */
const SAFE_TERM = /^[\p{L}\p{N}']+$/u;
const key = (path: string, analyzer: string, terms: readonly string[]) => `${path}\u0000${analyzer}\u0000${[...terms].sort().join('\u0001')}`;

/** Collects the text lookups of a query (via `collect`), runs one fts_search plan per lookup, answers them. */
export async function retrieve(backend: EsBackend, views: Array<{ view: IndexView; ref: IndexRef }>, collect: (ix: IndexView, r: Retrieval) => void): Promise<Retrieval> {
  const wanted = new Map<IndexView, Map<string, TextRequest>>();
  const recorder: Retrieval = {
    ids: () => undefined,
    want: (ix, req) => {
      let m = wanted.get(ix);
      if (!m) { m = new Map(); wanted.set(ix, m); }
      m.set(key(req.path, req.analyzer, req.terms), req);
    },
  };
  for (const { view } of views) collect(view, recorder);
  const found = new Map<IndexView, Map<string, Set<string>>>();
  for (const { view, ref } of views) {
    const reqs = wanted.get(view);
    if (!reqs || ref.readOnly) continue;
    const out = new Map<string, Set<string>>();
    for (const [k, req] of reqs) {
      const column = ref.meta.text[req.path];
      if (!column || !ref.table.fulltextAllWords?.includes(column) || !req.terms.length || !req.terms.every((t) => SAFE_TERM.test(t))) continue;
      // the node returns at most FTS_LIMIT hits: terms held by more documents are scored over the view
      const st = fieldStats(view, req.path, req.analyzer);
      if (req.terms.reduce((s, t) => s + (st.df.get(t) ?? 0), 0) >= FTS_LIMIT) continue;
      const plan = project(
        ftsSearch({ schema: ref.table.id, field: column, query: { terms: [...req.terms], operator: 'or' }, limit: FTS_LIMIT, ranking: { feedback: 'none', proximity: 'none', query_stopwords: 'none' } }),
        [{ name: '_id', expr: col('_id') }],
      );
      const rows = await backend.read(plan);
      if (rows.length >= FTS_LIMIT) continue; // maybe truncated: score over the whole view
      out.set(k, new Set(rows.map((r) => String(r._id))));
    }
    found.set(view, out);
  }
  return { ids: (ix, path, analyzer, terms) => found.get(ix)?.get(key(path, analyzer, terms)) };
}
