/**
 * Elasticsearch's can-match pre-filter phase: with more shards than `pre_filter_shard_size`, a
 * shard whose query rewrites to match_none is skipped (`_shards.skipped`). The rewrite asks the
 * shard's field ranges, not its matches: a `range` on a field the index does not map, holds no
 * value of, or whose values' [min, max] lies outside the bounds, is match_none, and so is a bool
 * with such a required clause (or whose should clauses all are), a constant_score over one, and
 * match_none. A search that must visit every document (a `global` aggregation, a terms
 * aggregation with `min_doc_count: 0`, a suggester, no query or match_all) skips nothing; when
 * every shard could be skipped, one still runs.
 */
import { illegalArgument } from './errors';
import type { IndexView } from './doc';
import type { Json, JsonObject } from './mapping';
import { rangeBounds } from './query';
import type { Params } from './types';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

function mustVisitAll(aggs: unknown): boolean {
  if (!isObj(aggs)) return false;
  for (const a of Object.values(aggs)) {
    if (!isObj(a)) continue;
    if (a.global !== undefined) return true;
    if (isObj(a.terms) && Number(a.terms.min_doc_count ?? 1) === 0) return true;
    if (mustVisitAll(a.aggs ?? a.aggregations)) return true;
  }
  return false;
}

/** Whether `q` can match documents of `ix` as a shard's rewrite decides it. */
function canMatch(ix: IndexView, q: unknown): boolean {
  if (!isObj(q)) return true;
  const [kind] = Object.keys(q);
  const body = q[kind];
  switch (kind) {
    case 'match_none': return false;
    case 'constant_score': return !isObj(body) || canMatch(ix, body.filter);
    case 'bool': {
      if (!isObj(body)) return true;
      const list = (v: unknown): unknown[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
      const required = [...list(body.must), ...list(body.filter)];
      if (required.some((c) => !canMatch(ix, c))) return false;
      const should = list(body.should);
      if (should.length && !required.length && body.minimum_should_match === undefined && should.every((c) => !canMatch(ix, c))) return false;
      return true;
    }
    case 'range': {
      if (!isObj(body)) return true;
      const [name] = Object.keys(body);
      const f = ix.fields.get(name);
      if (!f) return false;
      const p = body[name];
      if (!isObj(p)) return true;
      let bounds: ReturnType<typeof rangeBounds>;
      try { bounds = rangeBounds(f, p); } catch { return true; }
      let min: number | null = null, max: number | null = null;
      for (const d of ix.docs) for (const v of d.values(f.path)) {
        if (typeof v !== 'number') return true; // a keyword or ip range: not decided here
        if (min === null || v < min) min = v;
        if (max === null || v > max) max = v;
      }
      if (min === null || max === null) return false;
      const num = (x: Json | undefined) => (typeof x === 'number' ? x : undefined);
      const gt = num(bounds.gt), gte = num(bounds.gte), lt = num(bounds.lt), lte = num(bounds.lte);
      if (gt !== undefined && max <= gt) return false;
      if (gte !== undefined && max < gte) return false;
      if (lt !== undefined && min >= lt) return false;
      if (lte !== undefined && min > lte) return false;
      return true;
    }
    default: return true;
  }
}

/** `_shards.skipped` of a search over `views` (each index's shards take its verdict). */
export function skippedShards(views: IndexView[], b: JsonObject, q: Params): number {
  if (q.pre_filter_shard_size === undefined) return 0;
  const size = Number(q.pre_filter_shard_size);
  if (!(size >= 1)) throw illegalArgument('preFilterShardSize must be >= 1');
  const shardsOf = (ix: IndexView) => Number((ix.settings as JsonObject)['index.number_of_shards'] ?? 1);
  const total = views.reduce((s, ix) => s + shardsOf(ix), 0);
  if (total <= size || b.suggest !== undefined || mustVisitAll(b.aggs ?? b.aggregations)) return 0;
  const query = b.query;
  if (query === undefined || (isObj(query) && query.match_all !== undefined)) return 0;
  const skipped = views.filter((ix) => !canMatch(ix, query)).reduce((s, ix) => s + shardsOf(ix), 0);
  return skipped === total ? total - 1 : skipped;
}
