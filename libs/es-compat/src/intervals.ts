/**
 * The `intervals` query: rules (match, any_of, all_of, prefix, wildcard, fuzzy) produce the
 * minimal position intervals of a text field; filters (before, after, containing, contained_by,
 * overlapping and their negations) keep some; a document matches when an interval is left.
 * Score: boost · Σ 1/(1 + width) saturated as Elasticsearch's default (freq / (freq + 1)).
 */
import { parsingError } from './errors';
import type { Doc } from './doc';
import type { JsonObject } from './mapping';
import { analyze } from './analysis';
import { indexAnalyzer, isText, searchAnalyzer } from './fields';
import { editDistance, fuzziness, type QueryEnv, type Scorer } from './query';

type Iv = readonly [number, number];
type Rule = (d: Doc) => Iv[];
const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Minimal intervals holding one interval of each source (ordered: in sequence, no overlap). */
function combine(sources: Iv[][], ordered: boolean, maxGaps: number): Iv[] {
  if (sources.some((s) => !s.length)) return [];
  const out: Iv[] = [];
  const inner = (ivs: Iv[]) => ivs.reduce((s, [a, b]) => s + (b - a + 1), 0);
  if (ordered) {
    for (const first of sources[0]) {
      const chosen: Iv[] = [first];
      let ok = true;
      for (let i = 1; i < sources.length && ok; i++) {
        const prev = chosen[chosen.length - 1];
        const next = sources[i].filter((x) => x[0] > prev[1]).sort((a, b) => a[1] - b[1])[0];
        if (!next) ok = false;
        else chosen.push(next);
      }
      if (!ok) continue;
      const iv: Iv = [first[0], chosen[chosen.length - 1][1]];
      if (maxGaps < 0 || iv[1] - iv[0] + 1 - inner(chosen) <= maxGaps) out.push(iv);
    }
  } else {
    // every choice of one interval per source (documents are small); keep the minimal windows
    const rec = (i: number, picked: Iv[]) => {
      if (i === sources.length) {
        const sorted = [...picked].sort((a, b) => a[0] - b[0]);
        for (let k = 1; k < sorted.length; k++) if (sorted[k][0] <= sorted[k - 1][1]) return;
        const iv: Iv = [sorted[0][0], Math.max(...sorted.map((x) => x[1]))];
        if (maxGaps < 0 || iv[1] - iv[0] + 1 - inner(sorted) <= maxGaps) out.push(iv);
        return;
      }
      for (const x of sources[i]) { picked.push(x); rec(i + 1, picked); picked.pop(); }
    };
    rec(0, []);
  }
  const uniq = [...new Map(out.map((x) => [`${x[0]}:${x[1]}`, x])).values()];
  return uniq.filter((x) => !uniq.some((y) => y !== x && y[0] >= x[0] && y[1] <= x[1] && (y[0] !== x[0] || y[1] !== x[1])));
}

/** The terms a `prefix`, `wildcard` or `fuzzy` rule's intervals are at (also text-plan.ts, which expands them). */
export function intervalTermTest(kind: 'prefix' | 'wildcard' | 'fuzzy', p: JsonObject): (t: string) => boolean {
  if (kind === 'prefix') { const pre = String(p.prefix); return (t) => t.startsWith(pre); }
  if (kind === 'wildcard') {
    const rx = new RegExp(`^${String(p.pattern).replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
    return (t) => rx.test(t);
  }
  const term = String(p.term);
  const max = fuzziness(p.fuzziness ?? 'AUTO', term);
  const pre = Number(p.prefix_length ?? 0);
  return (t) => t.slice(0, pre) === term.slice(0, pre) && editDistance(t, term, max) <= max;
}

function compileRule(env: QueryEnv, field: string, rule: unknown): Rule {
  if (!isObj(rule)) throw parsingError('[intervals] rule must be an object');
  const [kind] = Object.keys(rule);
  const p = rule[kind] as JsonObject;
  const f = env.ix.fields.get(String(p?.use_field ?? field));
  if (!f || !isText(f)) return () => [];
  const path = f.path;
  const an = indexAnalyzer(env.ix, f);
  const positionsOf = (match: (t: string) => boolean) => (d: Doc): Iv[] => {
    const out: Iv[] = [];
    for (const [t, ps] of d.positions(path, an)) if (match(t)) for (const x of ps) out.push([x, x]);
    return out.sort((a, b) => a[0] - b[0]);
  };
  let base: Rule;
  switch (kind) {
    case 'match': {
      const toks = analyze(String(p.query), searchAnalyzer(env.ix, f, p.analyzer));
      const terms = toks.map((t) => t.term);
      const ordered = p.ordered === true;
      const gaps = p.max_gaps === undefined ? -1 : Number(p.max_gaps);
      base = (d) => (terms.length === 1 ? positionsOf((t) => t === terms[0])(d) : combine(terms.map((w) => positionsOf((t) => t === w)(d)), ordered, gaps));
      break;
    }
    case 'prefix': case 'wildcard': case 'fuzzy': base = positionsOf(intervalTermTest(kind, p)); break;
    case 'any_of': {
      const subs = ((p.intervals as unknown[]) ?? []).map((r) => compileRule(env, field, r));
      base = (d) => subs.flatMap((s) => s(d)).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      break;
    }
    case 'all_of': {
      const subs = ((p.intervals as unknown[]) ?? []).map((r) => compileRule(env, field, r));
      const gaps = p.max_gaps === undefined ? -1 : Number(p.max_gaps);
      base = (d) => combine(subs.map((s) => s(d)), p.ordered === true, gaps);
      break;
    }
    default:
      throw parsingError(`Unknown interval type [${kind}]`);
  }
  if (!isObj(p.filter)) return base;
  const [fk] = Object.keys(p.filter);
  if (fk === 'script') throw parsingError('[intervals] script filters are not supported by this service');
  const other = compileRule(env, field, p.filter[fk]);
  const test: Record<string, (i: Iv, o: Iv) => boolean> = {
    before: (i, o) => i[1] < o[0], after: (i, o) => i[0] > o[1],
    containing: (i, o) => i[0] <= o[0] && i[1] >= o[1], contained_by: (i, o) => o[0] <= i[0] && o[1] >= i[1],
    overlapping: (i, o) => i[0] <= o[1] && o[0] <= i[1],
  };
  const neg = fk.startsWith('not_');
  const t = test[neg ? fk.slice(4) : fk];
  if (!t) throw parsingError(`Unknown interval filter [${fk}]`);
  return (d) => {
    const os = other(d);
    return base(d).filter((i) => os.some((o) => t(i, o)) !== neg);
  };
}

export function intervalsQuery(env: QueryEnv, body: unknown): Scorer {
  if (!isObj(body)) throw parsingError('[intervals] query malformed');
  const [field] = Object.keys(body).filter((k) => k !== 'boost' && k !== '_name');
  const spec = body[field] as JsonObject;
  const boost = Number(spec?.boost ?? body.boost ?? 1);
  const rule = compileRule(env, field, Object.fromEntries(Object.entries(spec ?? {}).filter(([k]) => k !== 'boost')));
  return (d) => {
    const ivs = rule(d);
    if (!ivs.length) return null;
    const freq = ivs.reduce((s, [a, b]) => s + 1 / (1 + (b - a)), 0);
    return boost * (freq / (freq + 1));
  };
}
