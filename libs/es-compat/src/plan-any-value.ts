/**
 * Exact query clauses over fields of which some document holds several values (held in `_mv`,
 * columns.ts): Elasticsearch matches a document when any of its values matches. A compilation
 * whose fields map is `multiAware` wraps each clause on such a field (`anyValue`); `multiInput`
 * compiles a query so when the typed check (typed.ts `typedMulti`) finds such fields.
 */
import { filter, lit, unnest, type Expr, type PlanNode } from '@mmdb/plan';
import type { IndexRef } from './indices';
import type { IndexView } from './doc';
import type { EsBackend } from './port';
import type { JsonObject } from './mapping';
import { columnOf } from './columns';
import { typedMulti } from './typed';
import { plainValues, queryInput, valueOf, type Kind, type MatchInput } from './plan-aggs';
import { valuesOf } from './plan-multi';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Fields of which some document holds several values (in `_mv`), per fields map of a compilation:
 * a filter clause on one matches a document when any of its values does (`anyValue`).
 */
const multiFields = new WeakMap<Map<string, Kind>, ReadonlySet<string>>();

/** A fields map whose compilation reads `multi` (paths held in `_mv`) through `anyValue`. */
export function multiAware(multi: Iterable<string>): Map<string, Kind> {
  const fields = new Map<string, Kind>();
  multiFields.set(fields, new Set(multi));
  return fields;
}


/**
 * A clause's predicate `e` over a field some documents hold several values of: as it is where the
 * row holds one value, else true when any of the values in `_mv` passes it (Elasticsearch matches
 * a document when one of its values matches): `exists(filter(unnest(one row, the values, as the
 * field's column), e))`, correlated with the row.
 */
export function anyValue(e: Expr, name: string, k: Kind): Expr {
  const one: PlanNode = { op: 'values', columns: ['_one'], rows: [[lit(1)]] };
  const rows = unnest(one, valuesOf(name), columnOf(name), k === 'number' ? { affinity: 'real' } : {});
  return { kind: 'case', whens: [{ when: { kind: 'is_null', arg: valueOf(name), not: true }, then: e }], else: { kind: 'exists', plan: filter(rows, e) } };
}

/** The one field a filter clause reads, or undefined. */
function clauseField(c: unknown): string | undefined {
  if (!isObj(c) || Object.keys(c).length !== 1) return undefined;
  const body = Object.values(c)[0];
  if (!isObj(body)) return undefined;
  if ('exists' in c) return typeof body.field === 'string' ? body.field : undefined;
  const keys = Object.keys(body);
  return keys.length === 1 ? keys[0] : undefined;
}


/** A clause's predicate `e` (null: none), wrapped by `anyValue` when the compilation reads its field as multi-valued. */
export function anyValueOf(c: unknown, fields: Map<string, Kind>, e: Expr | null): Expr | null {
  const multi = multiFields.get(fields);
  if (!e || !multi) return e;
  const name = clauseField(c);
  return name !== undefined && multi.has(name) && fields.has(name) ? anyValue(e, name, fields.get(name)!) : e;
}

/**
 * A query's matches as a plan input when some field it reads is held in `_mv` by some document
 * (a clause on such a field matches any value: `anyValue`), or null when a field it reads is not
 * plain nor held there. The fields it reads are checked here.
 */
export async function multiInput(backend: EsBackend, ref: IndexRef, ix: IndexView, lsn: number, query: unknown, match?: MatchInput): Promise<PlanNode | null> {
  const probe = new Map<string, Kind>();
  const input = queryInput(ref, ix, query, probe, match);
  if (!input) return null;
  const typedPaths = [...probe].filter(([, k]) => k !== 'date').map(([f]) => f);
  const multi = typedPaths.length ? await typedMulti(backend, ref, lsn, typedPaths) : [];
  if (!multi) return null;
  if (!multi.length) return (await plainValues(backend, ref, lsn, probe)) ? input : null;
  const fields = multiAware(multi);
  const aware = queryInput(ref, ix, query, fields, match);
  if (!aware || !(await plainValues(backend, ref, lsn, new Map([...fields].filter(([f]) => !multi.includes(f)))))) return null;
  return aware;
}

