/** Highlighting (plain/unified style) of text and keyword fields with the query's terms. */
import type { Doc, IndexView } from './doc';
import type { Json, JsonObject } from './mapping';
import { analyze } from './analysis';
import { expandFields, indexAnalyzer, isKeyword, isText } from './fields';
import { parseQueryString, parseSimpleQueryString } from './query-string';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
type Want = { field: string; match: (term: string) => boolean };

/** Terms each field of the query looks for (field '*' when the query names none). */
export function queryTerms(ix: IndexView, q: Json | undefined, out: Want[] = []): Want[] {
  if (!isObj(q)) return out;
  for (const [kind, body] of Object.entries(q)) {
    if (!isObj(body) && !Array.isArray(body)) continue;
    const fieldBody = (fn: (field: string, p: JsonObject) => void) => {
      if (!isObj(body)) return;
      for (const [f, v] of Object.entries(body)) if (f !== 'boost' && f !== '_name') fn(f, isObj(v) ? v : { query: v, value: v });
    };
    const analyzed = (field: string, text: string) => {
      const f = ix.fields.get(field);
      const an = f ? indexAnalyzer(ix, f) : 'standard';
      const set = new Set(analyze(text, an).map((t) => t.term));
      out.push({ field, match: (t) => set.has(t) });
    };
    switch (kind) {
      case 'match': case 'match_phrase': case 'match_phrase_prefix': case 'match_bool_prefix':
        fieldBody((f, p) => analyzed(f, String(p.query)));
        break;
      case 'term':
        fieldBody((f, p) => { const v = String(p.value); out.push({ field: f, match: (t) => t === v }); });
        break;
      case 'terms':
        fieldBody((f, p) => { const vs = new Set((Array.isArray(p.query) ? p.query : []).map(String)); out.push({ field: f, match: (t) => vs.has(t) }); });
        break;
      case 'prefix':
        fieldBody((f, p) => { const v = String(p.value); out.push({ field: f, match: (t) => t.startsWith(v) }); });
        break;
      case 'wildcard':
        fieldBody((f, p) => { const rx = new RegExp(`^${String(p.value).replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`, 'i'); out.push({ field: f, match: (t) => rx.test(t) }); });
        break;
      case 'multi_match': {
        const b = body as JsonObject;
        for (const { field } of expandFields(ix, Array.isArray(b.fields) ? b.fields.map(String) : ['*'])) analyzed(field.path, String(b.query));
        break;
      }
      case 'query_string': case 'simple_query_string': {
        const b = body as JsonObject;
        const fields = Array.isArray(b.fields) ? b.fields.map(String) : b.default_field ? [String(b.default_field)] : ['*'];
        const exp = expandFields(ix, fields).map((x) => x.field.path);
        queryTerms(ix, kind === 'query_string' ? parseQueryString(b, exp.length ? exp : fields) : parseSimpleQueryString(b, exp.length ? exp : fields), out);
        break;
      }
      case 'bool':
        for (const k of ['must', 'should', 'filter']) {
          const v = (body as JsonObject)[k];
          for (const c of Array.isArray(v) ? v : v === undefined ? [] : [v]) queryTerms(ix, c, out);
        }
        break;
      case 'dis_max':
        for (const c of ((body as JsonObject).queries as Json[]) ?? []) queryTerms(ix, c, out);
        break;
      case 'constant_score': queryTerms(ix, (body as JsonObject).filter, out); break;
      case 'function_score': case 'boosting': queryTerms(ix, (body as JsonObject).query ?? (body as JsonObject).positive, out); break;
    }
  }
  return out;
}

function fragments(text: string, an: string, match: (t: string) => boolean, pre: string, post: string, size: number, count: number): string[] {
  const toks = an === 'keyword' ? [{ term: text, start: 0, end: text.length }] : analyze(text, an);
  const hits = toks.filter((t) => match(t.term));
  if (!hits.length) return [];
  const mark = (from: number, to: number) => {
    let s = '';
    let at = from;
    for (const h of hits) {
      if (h.start < from || h.end > to) continue;
      s += text.slice(at, h.start) + pre + text.slice(h.start, h.end) + post;
      at = h.end;
    }
    return s + text.slice(at, to);
  };
  if (count === 0 || text.length <= size) return [mark(0, text.length)];
  const out: string[] = [];
  let last = -1;
  for (const h of hits) {
    if (h.start < last) continue;
    let from = Math.max(0, h.start - Math.floor(size / 4));
    while (from > 0 && !/\s/.test(text[from - 1])) from--;
    let to = Math.min(text.length, from + size);
    while (to < text.length && !/\s/.test(text[to])) to++;
    out.push(mark(from, to).trim());
    last = to;
    if (out.length >= count) break;
  }
  return out;
}

/** The `highlight` object of a hit, or undefined when nothing matched. */
export function highlightDoc(d: Doc, spec: JsonObject, query: Json | undefined): JsonObject | undefined {
  const ix = d.index;
  const fieldsSpec = spec.fields;
  const entries: Array<[string, JsonObject]> = Array.isArray(fieldsSpec)
    ? fieldsSpec.flatMap((x) => Object.entries(x as JsonObject)) as Array<[string, JsonObject]>
    : Object.entries((fieldsSpec as JsonObject) ?? {}) as Array<[string, JsonObject]>;
  const out: JsonObject = {};
  for (const [pattern, fspec0] of entries) {
    const fspec = isObj(fspec0) ? fspec0 : {};
    const hq = fspec.highlight_query ?? spec.highlight_query ?? query;
    const wants = queryTerms(ix, hq as Json);
    const requireMatch = (fspec.require_field_match ?? spec.require_field_match) !== false;
    const pre = String(((fspec.pre_tags ?? spec.pre_tags) as Json[] | undefined)?.[0] ?? '<em>');
    const post = String(((fspec.post_tags ?? spec.post_tags) as Json[] | undefined)?.[0] ?? '</em>');
    const size = Number(fspec.fragment_size ?? spec.fragment_size ?? 100);
    const count = Number(fspec.number_of_fragments ?? spec.number_of_fragments ?? 5);
    for (const { field } of expandFields(ix, [pattern])) {
      if (!isText(field) && !isKeyword(field)) continue;
      const ws = wants.filter((w) => w.field === field.path || w.field === '*' || !requireMatch || (w.field.includes('*') && new RegExp(`^${w.field.replace(/\*/g, '.*')}$`).test(field.path)));
      if (!ws.length) continue;
      const match = (t: string) => ws.some((w) => w.match(t));
      const an = isText(field) ? indexAnalyzer(ix, field) : 'keyword';
      const frags = d.values(field.path).flatMap((v) => fragments(String(v), an, match, pre, post, size, count));
      if (frags.length) out[field.path] = count === 0 ? frags : frags.slice(0, count);
    }
  }
  return Object.keys(out).length ? out : undefined;
}
