/** function_score: weight, field_value_factor, random_score, decay functions (gauss, exp, linear); script_score refused. */
import { EsError, parsingError } from './errors';
import type { Doc } from './doc';
import type { JsonObject } from './mapping';
import { isDate } from './fields';
import { parseDateMath } from './dates';
import { scriptRefused, type QueryEnv, type Scorer } from './query';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

type Fn = (d: Doc, score: number) => number;

function distanceUnit(v: unknown): number {
  if (typeof v === 'number') return v;
  const m = /^(-?[\d.]+)\s*(ms|s|m|h|d|w|km|mi)?$/.exec(String(v));
  if (!m) return Number(v);
  const n = Number(m[1]);
  const u: Record<string, number> = { ms: 1, s: 1000, m: 60000, h: 3600000, d: 86400000, w: 604800000, km: 1000, mi: 1609.344 };
  return m[2] ? n * u[m[2]] : n;
}

function compileFn(env: QueryEnv, spec: JsonObject): Fn {
  if (spec.script_score !== undefined) throw scriptRefused('script_score');
  if (spec.field_value_factor !== undefined) {
    const p = spec.field_value_factor as JsonObject;
    const field = String(p.field);
    const factor = Number(p.factor ?? 1);
    const mod = String(p.modifier ?? 'none');
    return (d) => {
      const v = d.values(field)[0];
      let x = v === undefined ? (p.missing === undefined ? NaN : Number(p.missing)) : Number(v);
      if (Number.isNaN(x)) throw new EsError(400, 'illegal_argument_exception', `Missing value for field [${field}]`);
      x *= factor;
      switch (mod) {
        case 'log': return Math.log10(x);
        case 'log1p': return Math.log10(x + 1);
        case 'log2p': return Math.log10(x + 2);
        case 'ln': return Math.log(x);
        case 'ln1p': return Math.log1p(x);
        case 'ln2p': return Math.log(x + 2);
        case 'square': return x * x;
        case 'sqrt': return Math.sqrt(x);
        case 'reciprocal': return 1 / x;
        default: return x;
      }
    };
  }
  if (spec.random_score !== undefined) {
    const seed = String((spec.random_score as JsonObject).seed ?? 0);
    return (d) => {
      let h = 2166136261;
      for (const c of seed + d.id) h = Math.imul(h ^ c.charCodeAt(0), 16777619);
      return ((h >>> 0) % 1000000) / 1000000;
    };
  }
  for (const decay of ['gauss', 'exp', 'linear']) {
    if (spec[decay] === undefined) continue;
    const body = spec[decay] as JsonObject;
    const field = Object.keys(body).find((k) => k !== 'multi_value_mode')!;
    const p = body[field] as JsonObject;
    const f = env.ix.fields.get(field);
    const origin = isDate(f) ? parseDateMath(p.origin ?? 'now') : Number(p.origin ?? 0);
    const scale = distanceUnit(p.scale);
    const offset = distanceUnit(p.offset ?? 0);
    const dv = Number(p.decay ?? 0.5);
    return (d) => {
      const v = d.values(field)[0];
      if (v === undefined) return 1;
      const dist = Math.max(0, Math.abs(Number(v) - origin) - offset);
      if (decay === 'gauss') return Math.exp((dist * dist * Math.log(dv)) / (scale * scale));
      if (decay === 'exp') return Math.exp((Math.log(dv) / scale) * dist);
      const s = scale / (1 - dv);
      return Math.max(0, (s - dist) / s);
    };
  }
  if (spec.weight !== undefined) return () => 1;
  throw parsingError('failed to parse [function_score] query: unknown function');
}

export function compileFunctionScore(env: QueryEnv, body: unknown, compile: (env: QueryEnv, q: unknown) => Scorer): Scorer {
  if (!isObj(body)) throw parsingError('[function_score] malformed query');
  const inner = compile(env, body.query ?? { match_all: {} });
  const specs: JsonObject[] = Array.isArray(body.functions) ? (body.functions as JsonObject[]) : [];
  const top = { ...body };
  delete top.query; delete top.functions; delete top.boost; delete top.score_mode; delete top.boost_mode; delete top.max_boost; delete top.min_score;
  if (!specs.length && Object.keys(top).length) specs.push(top as JsonObject);
  const fns = specs.map((s) => ({ filter: s.filter === undefined ? null : compile(env, s.filter), fn: compileFn(env, s), weight: s.weight === undefined ? 1 : Number(s.weight) }));
  const scoreMode = String(body.score_mode ?? 'multiply');
  const boostMode = String(body.boost_mode ?? 'multiply');
  const maxBoost = body.max_boost === undefined ? Infinity : Number(body.max_boost);
  const minScore = body.min_score === undefined ? null : Number(body.min_score);
  const boost = body.boost === undefined ? 1 : Number(body.boost);
  return (d) => {
    const q = inner(d);
    if (q === null) return null;
    const vals: number[] = [];
    const ws: number[] = [];
    for (const f of fns) {
      if (f.filter && f.filter(d) === null) continue;
      vals.push(f.fn(d, q) * f.weight);
      ws.push(f.weight);
    }
    let fs: number;
    if (!vals.length) fs = 1;
    else switch (scoreMode) {
      case 'sum': fs = vals.reduce((a, b) => a + b, 0); break;
      case 'avg': fs = vals.reduce((a, b) => a + b, 0) / ws.reduce((a, b) => a + b, 0); break;
      case 'first': fs = vals[0]; break;
      case 'max': fs = Math.max(...vals); break;
      case 'min': fs = Math.min(...vals); break;
      default: fs = vals.reduce((a, b) => a * b, 1);
    }
    fs = Math.min(fs, maxBoost);
    let s: number;
    switch (boostMode) {
      case 'replace': s = fs; break;
      case 'sum': s = q + fs; break;
      case 'avg': s = (q + fs) / 2; break;
      case 'max': s = Math.max(q, fs); break;
      case 'min': s = Math.min(q, fs); break;
      default: s = q * fs;
    }
    s *= boost;
    if (minScore !== null && s < minScore) return null;
    return s;
  };
}
