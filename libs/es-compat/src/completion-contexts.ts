/**
 * Contexts of a `completion` field as Elasticsearch's ContextMappings index and query them:
 * `category` (strings) and `geo` (geohashes of the field's precision) contexts, each from the
 * input's own `contexts` and from another field of the document (`path`). An input of a
 * context-enabled field must have at least one context, and a completion query on it must name
 * at least one: both as Elasticsearch answers them. A suggestion matches when any of the query's
 * contexts (of any name) matches one of the input's, scoring its weight times the best boost.
 */
import { illegalArgument } from './errors';
import { valuesAt, type Field, type Json, type JsonObject } from './mapping';
import { geohash, geohashNeighbours, geohashPrecision, geoPointOf } from './geohash';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

interface ContextMapping { readonly name: string; readonly type: 'category' | 'geo'; readonly path?: string; readonly precision: number }

/** The context mappings of a completion field (none when it has no `contexts`). */
export function contextMappings(f: Field): ContextMapping[] {
  const defs = Array.isArray(f.def.contexts) ? f.def.contexts : [];
  return defs.filter(isObj).map((c) => ({
    name: String(c.name),
    type: c.type === 'geo' ? 'geo' : 'category',
    path: c.path === undefined ? undefined : String(c.path),
    precision: geohashPrecision(c.precision, 6),
  }));
}

/** The geo points of a context value: one point, or a list of points. */
function points(v: Json | undefined): Array<[number, number]> {
  if (v === undefined || v === null) return [];
  const one = geoPointOf(v);
  if (one) return [one];
  return Array.isArray(v) ? v.map(geoPointOf).filter((p): p is [number, number] => p !== null) : [];
}

/**
 * The contexts of one input, per context name: its own `contexts` and the values of the mapping's
 * `path` in the document (`pathValues` reads them), geo points as geohashes.
 */
export function inputContexts(cms: readonly ContextMapping[], own: JsonObject | undefined, pathValues: (path: string) => Json[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const cm of cms) {
    const set = new Set<string>();
    const given: Json[] = [];
    if (cm.path !== undefined) given.push(...pathValues(cm.path));
    const mine = own?.[cm.name];
    if (mine !== undefined && mine !== null) {
      if (cm.type === 'geo') given.push(...(points(mine).length ? points(mine).map(([lat, lon]) => ({ lat, lon })) : []));
      else given.push(...(Array.isArray(mine) ? mine : [mine]));
    }
    for (const v of given) {
      if (cm.type === 'geo') for (const [lat, lon] of points(v)) set.add(geohash(lat, lon, cm.precision));
      else if (v !== null && !isObj(v)) set.add(String(v));
    }
    if (set.size) out.set(cm.name, set);
  }
  return out;
}

/** The write-time check: an input of a context-enabled field without any context is refused. */
export function requireContexts(f: Field, cms: readonly ContextMapping[], ctx: Map<string, Set<string>>): void {
  if (cms.length && ctx.size === 0) throw illegalArgument(`Contexts are mandatory in context enabled completion field [${f.path}]`);
}

interface QueryContext { readonly name: string; readonly value: string; readonly prefix: boolean; readonly boost: number }

/** A completion query's `contexts` compiled as Elasticsearch's internal query contexts (geo: the cell and its neighbours). */
export function queryContexts(f: Field, cms: readonly ContextMapping[], spec: unknown): QueryContext[] | null {
  if (!cms.length) return null;
  const out: QueryContext[] = [];
  const given = isObj(spec) ? spec : {};
  for (const cm of cms) {
    const raw = given[cm.name];
    if (raw === undefined || raw === null) continue;
    const list = cm.type === 'geo' && (geoPointOf(raw) || (isObj(raw) && raw.context !== undefined)) ? [raw] : Array.isArray(raw) ? raw : [raw];
    for (const x of list) {
      const wrapped = isObj(x) && x.context !== undefined;
      const boost = wrapped && x.boost !== undefined ? Number(x.boost) : 1;
      if (cm.type === 'category') {
        out.push({ name: cm.name, value: String(wrapped ? x.context : x), prefix: wrapped && x.prefix === true, boost });
        continue;
      }
      const pt = geoPointOf(wrapped ? x.context : x);
      if (!pt) throw illegalArgument(`failed to parse geo context [${cm.name}] of completion field [${f.path}]`);
      const level = Math.min(cm.precision, geohashPrecision(wrapped ? x.precision : undefined, 12));
      const hash = geohash(pt[0], pt[1], level);
      const cells = new Set([hash]);
      const neighbours = wrapped && Array.isArray(x.neighbours) ? x.neighbours.map((n) => geohashPrecision(n, level)) : [];
      if (!neighbours.length && hash.length === cm.precision) for (const n of geohashNeighbours(hash)) cells.add(n);
      for (const n of neighbours) {
        if (n >= hash.length) continue;
        const cut = hash.slice(0, n);
        cells.add(cut);
        for (const c of geohashNeighbours(cut)) cells.add(c);
      }
      for (const c of cells) out.push({ name: cm.name, value: c, prefix: c.length < cm.precision, boost });
    }
  }
  if (!out.length) throw illegalArgument('Missing mandatory contexts in context query');
  return out;
}

/** The best boost of the query contexts an input's contexts match (any of them), or 0 when none does. */
export function contextBoost(want: readonly QueryContext[] | null, have: Map<string, Set<string>>): number {
  if (!want) return 1;
  let best = 0;
  for (const q of want) {
    const vals = have.get(q.name);
    if (!vals) continue;
    const ok = q.prefix ? [...vals].some((v) => v.startsWith(q.value)) : vals.has(q.value);
    if (ok && q.boost > best) best = q.boost;
  }
  return best;
}

/** The inputs of a completion value: strings, or objects with `input` (one or a list), `weight` and `contexts`. */
export function inputsOf(v: Json): Array<{ input: string; weight: number; contexts?: JsonObject }> {
  const out: Array<{ input: string; weight: number; contexts?: JsonObject }> = [];
  for (const x of Array.isArray(v) ? v : [v]) {
    if (typeof x === 'string') out.push({ input: x, weight: 1 });
    else if (isObj(x)) {
      const w = x.weight === undefined ? 1 : Number(x.weight);
      const contexts = isObj(x.contexts) ? x.contexts : undefined;
      for (const i of Array.isArray(x.input) ? x.input : [x.input]) if (i !== undefined && i !== null) out.push({ input: String(i), weight: w, contexts });
    }
  }
  return out;
}

/** A document's write check: every input of a context-enabled completion field has a context (`values`: the document's doc values). */
export function checkCompletionContexts(fields: Map<string, Field>, source: Json, values: Map<string, Json[]>): void {
  for (const f of fields.values()) {
    if (f.type !== 'completion' || !Array.isArray(f.def.contexts) || !f.def.contexts.length) continue;
    const cms = contextMappings(f);
    const pathValues = (path: string): Json[] => values.get(path) ?? valuesAt(source, path);
    for (const v of valuesAt(source, f.parent ?? f.path)) {
      for (const { contexts } of inputsOf(v)) requireContexts(f, cms, inputContexts(cms, contexts, pathValues));
    }
  }
}
