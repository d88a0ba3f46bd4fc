/** Lucene query syntax (query_string) and simple_query_string, parsed into Query DSL objects. */
import { EsError } from './errors';
import type { Json, JsonObject } from './mapping';

type Q = JsonObject;
type Occur = 'must' | 'should' | 'must_not';

interface Tok { t: 'word' | 'phrase' | 'op' | 'lp' | 'rp' | 'range' | 'regex'; v: string; field?: string; suffix?: string; mod?: '+' | '-' }

function lex(s: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  const isWs = (c: string) => /\s/.test(c);
  while (i < s.length) {
    const c = s[i];
    if (isWs(c)) { i++; continue; }
    let mod: '+' | '-' | undefined;
    if ((c === '+' || c === '-' || c === '!') && i + 1 < s.length && !isWs(s[i + 1])) {
      mod = c === '!' ? '-' : c;
      i++;
    }
    if (s[i] === '(') { out.push({ t: 'lp', v: '(', mod }); i++; continue; }
    if (s[i] === ')') {
      i++;
      let suffix = '';
      while (i < s.length && /[~^\d.]/.test(s[i])) suffix += s[i++];
      out.push({ t: 'rp', v: ')', suffix });
      continue;
    }
    // field prefix
    let field: string | undefined;
    const fm = /^((?:\\.|[^\s:()"\\[\]{}])+):(?!\/)/.exec(s.slice(i));
    if (fm && !/^(AND|OR|NOT)$/.test(fm[1])) { field = fm[1].replace(/\\(.)/g, '$1'); i += fm[0].length; }
    else {
      const fm2 = /^((?:\\.|[^\s:()"\\[\]{}])+):(?=\/)/.exec(s.slice(i));
      if (fm2) { field = fm2[1]; i += fm2[0].length; }
    }
    if (s[i] === '(' && field) { out.push({ t: 'lp', v: '(', field, mod }); i++; continue; }
    if (s[i] === '"') {
      const end = s.indexOf('"', i + 1);
      const v = s.slice(i + 1, end < 0 ? s.length : end);
      i = end < 0 ? s.length : end + 1;
      let suffix = '';
      while (i < s.length && /[~^\d.]/.test(s[i])) suffix += s[i++];
      out.push({ t: 'phrase', v, field, suffix, mod });
      continue;
    }
    if (s[i] === '[' || s[i] === '{') {
      const close = s.slice(i).search(/[\]}]/);
      const v = s.slice(i, close < 0 ? s.length : i + close + 1);
      i += v.length;
      out.push({ t: 'range', v, field, mod });
      continue;
    }
    if (s[i] === '/') {
      const end = s.indexOf('/', i + 1);
      const v = s.slice(i + 1, end < 0 ? s.length : end);
      i = end < 0 ? s.length : end + 1;
      out.push({ t: 'regex', v, field, mod });
      continue;
    }
    let w = '';
    while (i < s.length && !isWs(s[i]) && s[i] !== ')' && s[i] !== '(') {
      if (s[i] === '\\' && i + 1 < s.length) { w += s[i + 1]; i += 2; continue; }
      w += s[i++];
    }
    if (!field && (w === 'AND' || w === 'OR' || w === 'NOT' || w === '&&' || w === '||')) { out.push({ t: 'op', v: w === '&&' ? 'AND' : w === '||' ? 'OR' : w }); continue; }
    let suffix = '';
    const sm = /([~^][\d.]*)+$/.exec(w);
    if (sm && sm.index > 0) { suffix = sm[0]; w = w.slice(0, sm.index); }
    out.push({ t: 'word', v: w, field, suffix, mod });
  }
  return out;
}

function boostIn(suffix: string | undefined): number | undefined {
  const m = /\^([\d.]+)/.exec(suffix ?? '');
  return m ? Number(m[1]) : undefined;
}
function tildeIn(suffix: string | undefined): string | undefined {
  const m = /~([\d.]*)/.exec(suffix ?? '');
  return m ? m[1] || 'AUTO' : undefined;
}

interface Opts { fields: string[]; op: 'and' | 'or'; body: JsonObject }

/** One query per field (`name^b`: the field's boost inside its query), their best as a dis_max. */
function onFields(fields: string[], make: (f: string) => Q, boost?: number): Q {
  const qs = fields.map((spec): Q => {
    const [f, b] = spec.split('^');
    const q = make(f);
    const [kind] = Object.keys(q);
    const inner = (q[kind] as JsonObject)[f];
    return b === undefined || typeof inner !== 'object' || inner === null || Array.isArray(inner) ? q : { [kind]: { [f]: { ...inner, boost: Number(b) } } };
  });
  const q = qs.length === 1 ? qs[0] : { dis_max: { queries: qs, tie_breaker: 0 } as Json };
  return boost === undefined ? q : { bool: { must: [q], boost } };
}

function leaf(tok: Tok, o: Opts): Q {
  const fields = tok.field ? [tok.field] : o.fields;
  const boost = boostIn(tok.suffix);
  const lenient = o.body.lenient === true || (!tok.field && o.fields.some((f) => f.includes('*')));
  // `analyzer` (and `quote_analyzer` for phrases) analyze the text instead of the fields' search analyzers
  const an: JsonObject = o.body.analyzer === undefined ? {} : { analyzer: String(o.body.analyzer) };
  const quoteAn: JsonObject = o.body.quote_analyzer === undefined ? an : { analyzer: String(o.body.quote_analyzer) };
  if (tok.t === 'phrase') {
    const slop = tildeIn(tok.suffix);
    return onFields(fields, (f) => ({ match_phrase: { [f]: { query: tok.v, slop: slop ? Number(slop === 'AUTO' ? 0 : slop) : Number(o.body.phrase_slop ?? 0), ...quoteAn } } }), boost);
  }
  if (tok.t === 'regex') return onFields(fields, (f) => ({ regexp: { [f]: { value: tok.v } } }), boost);
  if (tok.t === 'range') {
    const m = /^([[{])\s*(\S+)\s+TO\s+(\S+)\s*([\]}])$/.exec(tok.v);
    if (!m) throw new EsError(400, 'query_shard_exception', `Failed to parse query [${String(o.body.query)}]`);
    const r: JsonObject = {};
    if (m[2] !== '*') r[m[1] === '[' ? 'gte' : 'gt'] = m[2];
    if (m[3] !== '*') r[m[4] === ']' ? 'lte' : 'lt'] = m[3];
    return onFields(fields, (f) => ({ range: { [f]: r } }), boost);
  }
  const w = tok.v;
  if (tok.field === '_exists_') return { exists: { field: w } };
  if (w === '*' && tok.field) return { exists: { field: tok.field } };
  const cmp = /^(>=|<=|>|<)(.+)$/.exec(w);
  if (cmp && tok.field) {
    const k = { '>=': 'gte', '<=': 'lte', '>': 'gt', '<': 'lt' }[cmp[1]]!;
    return { range: { [tok.field]: { [k]: cmp[2] } } };
  }
  if (/[*?]/.test(w)) {
    const ci = o.body.analyze_wildcard !== false;
    return onFields(fields, (f) => ({ wildcard: { [f]: { value: ci ? w.toLowerCase() : w, case_insensitive: true } } }), boost);
  }
  const fz = tildeIn(tok.suffix);
  if (fz !== undefined) return onFields(fields, (f) => ({ match: { [f]: { query: w, fuzziness: fz, lenient, ...an } } }), boost);
  return onFields(fields, (f) => ({ match: { [f]: { query: w, operator: o.op, lenient, ...an } } }), boost);
}

/** Lucene's clause occurrence rules (QueryParserBase.addClause). */
function parseSeq(toks: Tok[], pos: { i: number }, o: Opts): Q {
  const clauses: Array<{ occur: Occur; q: Q }> = [];
  let conj: 'AND' | 'OR' | null = null;
  let not = false;
  while (pos.i < toks.length) {
    const tok = toks[pos.i];
    if (tok.t === 'rp') break;
    pos.i++;
    if (tok.t === 'op') {
      if (tok.v === 'NOT') not = true;
      else conj = tok.v as 'AND' | 'OR';
      continue;
    }
    let q: Q;
    if (tok.t === 'lp') {
      const inner = parseSeq(toks, pos, tok.field ? { ...o, fields: [tok.field] } : o);
      const close = toks[pos.i];
      pos.i++;
      const b = boostIn(close?.suffix);
      q = b === undefined ? inner : { bool: { must: [inner], boost: b } };
    } else q = leaf(tok, o);
    if (conj === 'AND' && clauses.length && clauses[clauses.length - 1].occur === 'should') clauses[clauses.length - 1].occur = 'must';
    if (conj === 'OR' && o.op === 'and' && clauses.length && clauses[clauses.length - 1].occur === 'must') clauses[clauses.length - 1].occur = 'should';
    let occur: Occur;
    if (tok.mod === '+') occur = 'must';
    else if (tok.mod === '-' || not) occur = 'must_not';
    else if (o.op === 'or') occur = conj === 'AND' ? 'must' : 'should';
    else occur = conj === 'OR' ? 'should' : 'must';
    clauses.push({ occur, q });
    conj = null;
    not = false;
  }
  if (clauses.length === 1 && clauses[0].occur !== 'must_not') return clauses[0].q;
  const bool: JsonObject = {};
  for (const c of clauses) ((bool[c.occur] ??= []) as Json[]).push(c.q);
  if (!bool.must && !bool.should) bool.must = [{ match_all: {} }];
  return { bool };
}

export function parseQueryString(body: JsonObject, fields: string[]): Q {
  const o: Opts = { fields, op: String(body.default_operator ?? 'or').toLowerCase() as 'and' | 'or', body };
  const text = String(body.query);
  const toks = lex(text);
  let depth = 0;
  for (const t of toks) { if (t.t === 'lp') depth++; if (t.t === 'rp') depth--; if (depth < 0) break; }
  if (depth !== 0) {
    throw new EsError(400, 'query_shard_exception', `Failed to parse query [${text}]`, { caused_by: { type: 'parse_exception', reason: `Cannot parse '${text}': Encountered "<EOF>"` } });
  }
  if (!toks.length) return { match_none: {} };
  return parseSeq(toks, { i: 0 }, o);
}

/** simple_query_string: `+` and, `|` or, `-` not, `"phrase"~n`, `prefix*`, `term~n`, `( )`; never errors. */
export function parseSimpleQueryString(body: JsonObject, fields: string[]): Q {
  const op = String(body.default_operator ?? 'or').toLowerCase();
  const text = String(body.query);
  let i = 0;
  const parseGroup = (): Q => {
    const ors: Q[][] = [[]];
    let pendingNot = false;
    while (i < text.length) {
      const c = text[i];
      if (/\s/.test(c)) { i++; continue; }
      if (c === ')') { i++; break; }
      if (c === '|') { ors.push([]); i++; continue; }
      if (c === '+') { i++; continue; }
      if (c === '-') { pendingNot = true; i++; continue; }
      let q: Q;
      if (c === '(') { i++; q = parseGroup(); }
      else if (c === '"') {
        const end = text.indexOf('"', i + 1);
        const v = text.slice(i + 1, end < 0 ? text.length : end);
        i = end < 0 ? text.length : end + 1;
        const m = /^~(\d+)/.exec(text.slice(i));
        if (m) i += m[0].length;
        q = onFields(fields, (f) => ({ match_phrase: { [f]: { query: v, slop: m ? Number(m[1]) : 0 } } }));
      } else {
        let w = '';
        while (i < text.length && !/[\s|()+]/.test(text[i])) w += text[i++];
        const fm = /~(\d*)$/.exec(w);
        if (w.endsWith('*')) q = onFields(fields, (f) => ({ prefix: { [f]: { value: w.slice(0, -1).toLowerCase() } } }));
        else if (fm) q = onFields(fields, (f) => ({ match: { [f]: { query: w.slice(0, fm.index), fuzziness: fm[1] || 'AUTO', lenient: true } } }));
        else q = onFields(fields, (f) => ({ match: { [f]: { query: w, lenient: true } } }));
      }
      if (pendingNot) { q = { bool: { must_not: [q] } }; pendingNot = false; }
      ors[ors.length - 1].push(q);
    }
    const groups: Q[] = ors.filter((g) => g.length).map((g) => (g.length === 1 ? g[0] : ({ bool: op === 'and' ? { must: g } : { should: g } } as Q)));
    if (!groups.length) return { match_none: {} };
    return groups.length === 1 ? groups[0] : { bool: { should: groups } };
  };
  return parseGroup();
}
