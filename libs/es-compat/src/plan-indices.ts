/**
 * A size-0 search of several indices (a comma list, a pattern, an alias over several) whose
 * aggregations the plans answer: one input per index (its query's matches, plan-aggs.ts
 * `queryInput`) projected to the columns the level reads, their `union all`, and the level's plans
 * (plan-level.ts) over it, so a terms aggregation groups the documents of every index together
 * as Elasticsearch reduces its shards' answers. Index order is kept: `_seq_no` becomes the index's
 * position · 2^40 + `_seq_no`, so compensated sums add the documents in the order the aggregation
 * code visits them (index by index). It answers when every index compiles the level to the same
 * plans over fields of the same mapping (a field mapped otherwise in one index, an index lacking a
 * column, a `global` or `min_doc_count: 0` that would read one index's table: the aggregation code
 * answers), and no alias filters. Fields some documents hold several values of (in indices made
 * with `_mv`) are read as in one index (plan-multi.ts) over the union, which then carries `_mv`.
 */
import { binary, col, lit, project, setOp, type PlanNode } from '@mmdb/plan';
import type { JsonObject } from './mapping';
import type { IndexRef } from './indices';
import type { IndexView } from './doc';
import type { EsBackend } from './port';
import type { Prepared } from './search';
import { aggsAnswer, aggsBody, plainValues, queryInput, type Kind, type MatchInput } from './plan-aggs';
import { multiInput } from './plan-any-value';
import { multiAggs } from './plan-multi';
import { typedMulti } from './typed';
import { compileLevel, runLevel, type Level } from './plan-level';
import { MV, columnOf } from './columns';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const SEQ_SPAN = 2 ** 40;

/** One index of the search: its table, view, view LSN and text plans. */
export interface IndexPart { readonly ref: IndexRef; readonly ix: IndexView; readonly lsn: number; readonly match?: MatchInput }

/** A spec holding an aggregation that reads one index's whole table (`global`, terms `min_doc_count: 0`). */
function readsTable(spec: unknown): boolean {
  if (Array.isArray(spec)) return spec.some(readsTable);
  if (!isObj(spec)) return false;
  for (const [k, v] of Object.entries(spec)) {
    if (k === 'global' || (k === 'min_doc_count' && Number(v) === 0) || readsTable(v)) return true;
  }
  return false;
}

const sameMap = (a: Map<string, Kind>, b: Map<string, Kind>): boolean => a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);

export async function planAggsIndices(backend: EsBackend, parts: IndexPart[], b: JsonObject, q: Record<string, string | undefined>, maxBuckets: number): Promise<Prepared | null> {
  // terminate_after caps each index's matches: plan-aggs.ts does it for one index, the view's code for several
  if (parts.length < 2 || parts.some((p) => p.ref.readOnly) || !aggsBody(b) || b.terminate_after !== undefined) return null;
  const spec = b.aggs ?? b.aggregations;
  if (!isObj(spec) || !Object.keys(spec).length || readsTable(spec)) return null;
  let first: { fields: Map<string, Kind>; level: Level; json: string } | undefined;
  const inputs: PlanNode[] = [];
  let plain = true;
  for (const p of parts) {
    const fields = new Map<string, Kind>();
    const input = queryInput(p.ref, p.ix, b.query, fields, p.match);
    const level = input && compileLevel(p.ix, spec, fields, p.match, null);
    if (!input || !level || level.wants.some((w) => w.composite && w.composite.size > maxBuckets)) return null;
    // the same plans over the same columns in every index (a level naming one index's table differs)
    const json = JSON.stringify(level);
    if (first && (json !== first.json || !sameMap(fields, first.fields))) return null;
    if ([...fields.values()].includes('date')) return null; // dates read from `_source` strings: one index's shapes
    plain &&= await plainValues(backend, p.ref, p.lsn, fields);
    first ??= { fields, level, json };
    inputs.push(input);
  }
  // a field mapped alike in every index (formats, scaling factors and normalizers decide the values)
  for (const f of first!.fields.keys()) {
    const defs = new Set(parts.map((p) => JSON.stringify([p.ix.fields.get(f)?.type, p.ix.fields.get(f)?.def])));
    if (defs.size !== 1) return null;
  }
  const cols = [...first!.fields.keys()].map(columnOf);
  // fields some documents hold several values of (every index made with `_mv`): the query's clauses match any value, the aggregations unnest them (plan-multi.ts)
  if (!plain) {
    if (parts.some((p) => !p.ref.meta.mv)) return null;
    for (let i = 0; i < parts.length; i++) {
      const aware = await multiInput(backend, parts[i].ref, parts[i].ix, parts[i].lsn, b.query, parts[i].match);
      if (!aware) return null;
      inputs[i] = aware;
    }
  }
  const union = inputs.map((input, i) => project(input, [
    { name: '_id', expr: col('_id') },
    { name: '_seq_no', expr: binary('+', col('_seq_no'), lit(i * SEQ_SPAN)) },
    ...cols.map((c) => ({ name: c, expr: col(c) })),
    ...(plain ? [] : [{ name: MV, expr: col(MV) }]),
  ]) as PlanNode).reduce((l, r) => setOp('union', l, r, true));
  const ran = plain ? await runLevel(backend, parts[0].ref, union, first!.level)
    : await multiAggs(backend, parts[0].ref, parts[0].ix, parts[0].lsn, union, spec, parts[0].match, null,
      async (f) => { for (const p of parts) if (!(await plainValues(backend, p.ref, p.lsn, f))) return false; return true; },
      async (paths) => {
        const all = new Set<string>();
        for (const p of parts) {
          const m = await typedMulti(backend, p.ref, p.lsn, paths);
          if (!m) return null;
          m.forEach((x) => all.add(x));
        }
        return [...all];
      });
  if (!ran) return null;
  const shards = parts.reduce((n, p) => n + Number((p.ix.settings as JsonObject)['index.number_of_shards'] ?? 1), 0);
  return aggsAnswer(parts[0].ix, b, q, spec, maxBuckets, ran, shards);
}
