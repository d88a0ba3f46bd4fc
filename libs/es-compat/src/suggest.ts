/** Suggesters: term (spelling per token), phrase (the best corrected phrase), completion (prefix on a completion field). */
import { illegalArgument, parsingError } from './errors';
import type { Doc, IndexView } from './doc';
import { valuesAt, type Json, type JsonObject } from './mapping';
import { contextBoost, contextMappings, inputContexts, inputsOf, queryContexts } from './completion-contexts';
import { analyze } from './analysis';
import { indexAnalyzer, searchAnalyzer } from './fields';
import { editDistance } from './query';
import { fieldStats } from './scoring';
import { filterSource, type SourceSpec } from './source-filter';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

function dictionary(ixs: IndexView[], field: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const ix of ixs) {
    const f = ix.fields.get(field);
    if (!f) continue;
    const st = fieldStats(ix, field, indexAnalyzer(ix, f));
    for (const [t, n] of st.df) out.set(t, (out.get(t) ?? 0) + n);
  }
  return out;
}

function termOptions(dict: Map<string, number>, word: string, p: JsonObject): JsonObject[] {
  const maxEdits = Number(p.max_edits ?? 2);
  const prefix = Number(p.prefix_length ?? 1);
  const minLen = Number(p.min_word_length ?? 4);
  const mode = String(p.suggest_mode ?? 'missing');
  const size = Number(p.size ?? 5);
  const own = dict.get(word) ?? 0;
  if (word.length < minLen) return [];
  if (mode === 'missing' && own > 0) return [];
  const opts: Array<{ text: string; score: number; freq: number }> = [];
  for (const [t, freq] of dict) {
    if (t === word || t.slice(0, prefix) !== word.slice(0, prefix)) continue;
    if (mode === 'popular' && freq <= own) continue;
    const d = editDistance(t, word, maxEdits);
    if (d > maxEdits) continue;
    opts.push({ text: t, score: 1 - d / Math.min(t.length, word.length), freq });
  }
  const byFreq = p.sort === 'frequency';
  opts.sort((a, b) => (byFreq ? b.freq - a.freq || b.score - a.score : b.score - a.score || b.freq - a.freq) || (a.text < b.text ? -1 : 1));
  return opts.slice(0, size) as unknown as JsonObject[];
}

export interface SuggestCtx { ixs: IndexView[]; docs: Doc[]; typedKeys: boolean; source?: SourceSpec }

export function runSuggest(spec: unknown, ctx: SuggestCtx): JsonObject {
  if (!isObj(spec)) throw parsingError('suggest must be an object');
  const globalText = spec.text;
  const out: JsonObject = {};
  for (const [name, body] of Object.entries(spec)) {
    if (name === 'text') continue;
    if (!isObj(body)) throw parsingError(`suggestion [${name}] must be an object`);
    const kind = ['term', 'phrase', 'completion'].find((k) => body[k] !== undefined);
    if (!kind) throw illegalArgument(`suggester[${Object.keys(body).filter((k) => k !== 'text').join(',')}] not supported`);
    const p = body[kind] as JsonObject;
    const text = String(body.text ?? body.prefix ?? globalText ?? '');
    const field = String(p.field);
    const key = ctx.typedKeys ? `${kind}#${name}` : name;
    if (kind === 'completion') { out[key] = completion(ctx, field, String(body.prefix ?? body.text ?? globalText ?? ''), p); continue; }
    const ix = ctx.ixs.find((x) => x.fields.has(field));
    const f = ix?.fields.get(field);
    const an = ix && f ? searchAnalyzer(ix, f, p.analyzer) : 'standard';
    const toks = analyze(text, an);
    const dict = dictionary(ctx.ixs, field);
    if (kind === 'term') {
      out[key] = toks.map((t) => ({ text: t.term, offset: t.start, length: t.end - t.start, options: termOptions(dict, t.term, p) as Json }));
    } else {
      const parts = toks.map((t) => {
        if ((dict.get(t.term) ?? 0) > 0) return { w: t.term, s: 1 };
        const o = termOptions(dict, t.term, { ...p, suggest_mode: 'always', size: 1, min_word_length: 1 })[0];
        return o ? { w: String(o.text), s: Number(o.score) } : { w: t.term, s: 0.1 };
      });
      const corrected = parts.map((x) => x.w).join(' ');
      const options: JsonObject[] = [];
      if (toks.length && corrected !== toks.map((t) => t.term).join(' ')) {
        const o: JsonObject = { text: corrected, score: parts.reduce((a, b) => a * b.s, 1) };
        const hl = isObj(p.highlight) ? p.highlight : undefined;
        if (hl) o.highlighted = parts.map((x, i) => (x.w !== toks[i].term ? `${hl.pre_tag ?? ''}${x.w}${hl.post_tag ?? ''}` : x.w)).join(' ');
        options.push(o);
      }
      out[key] = [{ text, offset: 0, length: text.length, options: options as Json }];
    }
  }
  return out;
}

function completion(ctx: SuggestCtx, field: string, prefix: string, p: JsonObject): Json {
  const size = Number(p.size ?? 5);
  const fuzzy = isObj(p.fuzzy) ? p.fuzzy : p.fuzzy === true ? {} : undefined;
  const norm = (s: string) => analyze(s, 'simple').map((t) => t.term).join(' ');
  const wanted = norm(prefix);
  const opts: Array<{ doc: Doc; text: string; weight: number }> = [];
  // each index's context mappings and the query's contexts compiled for them (a missing context fails before any document)
  const perIndex = new Map<IndexView, { cms: ReturnType<typeof contextMappings>; want: ReturnType<typeof queryContexts> }>();
  for (const ix of ctx.ixs) {
    const f = ix.fields.get(field);
    if (f && f.type === 'completion') { const cms = contextMappings(f); perIndex.set(ix, { cms, want: queryContexts(f, cms, p.contexts) }); }
  }
  for (const d of ctx.docs) {
    const f = d.index.fields.get(field);
    if (!f || f.type !== 'completion') continue;
    const parentPath = f.parent ?? f.path;
    let best: { text: string; weight: number } | null = null;
    const raw = (d.source as JsonObject);
    const vals = parentPath.split('.').reduce<Json | undefined>((o, k) => (isObj(o) ? o[k] : undefined), raw);
    if (vals === undefined) continue;
    // contexts (contexts.ts): the input's own and those of another field of the document (`path`)
    const { cms, want } = perIndex.get(d.index) ?? { cms: contextMappings(f), want: queryContexts(f, contextMappings(f), p.contexts) };
    const pathValues = (path: string): Json[] => { const own = d.values(path); return own.length ? own : valuesAt(raw, path); };
    for (const { input, weight, contexts } of inputsOf(vals)) {
      const boost = contextBoost(want, inputContexts(cms, contexts, pathValues));
      if (!boost) continue;
      const n = norm(input);
      const ok = fuzzy ? editDistance(n.slice(0, wanted.length), wanted, Number(fuzzy.fuzziness ?? 1)) <= Number(fuzzy.fuzziness ?? 1) : n.startsWith(wanted);
      if (ok && (!best || weight * boost > best.weight)) best = { text: input, weight: weight * boost };
    }
    if (best) opts.push({ doc: d, ...best });
  }
  opts.sort((a, b) => b.weight - a.weight || (a.text < b.text ? -1 : 1));
  let list = opts;
  if (p.skip_duplicates === true) {
    const seen = new Set<string>();
    list = opts.filter((o) => (seen.has(o.text) ? false : (seen.add(o.text), true)));
  }
  const options = list.slice(0, size).map((o) => {
    const r: JsonObject = { text: o.text, _index: o.doc.index.name, _type: '_doc', _id: o.doc.id, _score: o.weight };
    const src = filterSource(o.doc.source, ctx.source);
    if (src !== undefined) r._source = src;
    return r;
  });
  return [{ text: prefix, offset: 0, length: prefix.length, options: options as Json }];
}
