/** `_source` filtering (includes/excludes with wildcards and object paths), as for get and search. */
import type { Json, JsonObject } from './mapping';

export interface SourceSpec { readonly enabled: boolean; readonly includes: string[]; readonly excludes: string[] }

const list = (v: unknown): string[] => (v === undefined || v === null ? [] : Array.isArray(v) ? v.map(String) : String(v).split(',').filter(Boolean));

/** From a body `_source` value (true/false, string, array, {includes, excludes}). */
export function sourceSpec(v: unknown): SourceSpec {
  if (v === undefined || v === null || v === true || v === 'true') return { enabled: true, includes: [], excludes: [] };
  if (v === false || v === 'false') return { enabled: false, includes: [], excludes: [] };
  if (typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    return { enabled: true, includes: list(o.includes ?? o.include), excludes: list(o.excludes ?? o.exclude) };
  }
  return { enabled: true, includes: list(v), excludes: [] };
}

/** From query parameters `_source`, `_source_includes`, `_source_excludes`. */
export function sourceParams(q: Record<string, string | undefined>, dflt?: SourceSpec): SourceSpec | undefined {
  const base = q._source === undefined ? dflt : sourceSpec(q._source === '' ? true : q._source);
  const inc = q._source_includes ?? q._source_include;
  const exc = q._source_excludes ?? q._source_exclude;
  if (!base && inc === undefined && exc === undefined) return undefined;
  const s = base ?? { enabled: true, includes: [], excludes: [] };
  return { enabled: s.enabled || inc !== undefined, includes: inc !== undefined ? list(inc) : s.includes, excludes: exc !== undefined ? list(exc) : s.excludes };
}

function rx(p: string): RegExp {
  return new RegExp(`^${p.split('*').map((x) => x.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}

/** Applies the filter; undefined when `_source` is disabled. */
export function filterSource(src: JsonObject, spec: SourceSpec | undefined): JsonObject | undefined {
  if (!spec) return src;
  if (!spec.enabled) return undefined;
  if (!spec.includes.length && !spec.excludes.length) return src;
  const inc = spec.includes.map(rx);
  const exc = spec.excludes.map(rx);
  // a path is kept when it (or an ancestor) matches an include, or it is a prefix of an include (to reach it)
  const included = (path: string) => !inc.length || inc.some((r) => r.test(path)) ;
  const mayContain = (path: string) => !inc.length || spec.includes.some((p) => p.startsWith(path + '.') || rx(p.split('.').slice(0, path.split('.').length).join('.')).test(path));
  const excluded = (path: string) => exc.some((r) => r.test(path));
  const walk = (v: Json, path: string, underIncluded: boolean): Json | undefined => {
    if (path && excluded(path)) return undefined;
    const inHere = underIncluded || (path !== '' && included(path));
    if (Array.isArray(v)) {
      const out: Json[] = [];
      for (const x of v) {
        if (x !== null && typeof x === 'object') {
          const r = walk(x, path, inHere);
          if (r !== undefined) out.push(r);
        } else if (inHere) out.push(x);
      }
      return out.length || inHere ? out : undefined;
    }
    if (v !== null && typeof v === 'object') {
      const out: JsonObject = {};
      let any = false;
      for (const [k, x] of Object.entries(v)) {
        const p = path ? `${path}.${k}` : k;
        if (!inHere && !included(p) && !mayContain(p)) continue;
        const r = walk(x, p, inHere);
        if (r !== undefined) { out[k] = r; any = true; }
      }
      return any || (inHere && path !== '') ? out : path === '' ? out : undefined;
    }
    return inHere ? v : undefined;
  };
  return (walk(src, '', false) as JsonObject | undefined) ?? {};
}
