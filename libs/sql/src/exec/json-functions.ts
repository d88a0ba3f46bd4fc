/**
 * SQLite's JSON functions (json1) over JSON text: json, json_valid, json_type, json_extract,
 * json_array, json_object, json_array_length and the `->` / `->>` operators. A json or
 * vector column reads as its JSON text (column-codec.ts), so they work on those columns.
 * Numbers stay exact (parseJsonExact: big integers are bigint, i.e. SQL INTEGER).
 */
import { DbError, isLosslessNumber, parseJsonExact, stringifyJson } from '@mmdb/core';
import { realToInt, toText, type Value } from '../values';

type Fn = (args: Value[]) => Value;

function malformed(): never {
  throw new DbError('validation_failed', 'malformed JSON');
}

/**
 * Parsed JSON texts, so a query calling several JSON functions on a column (and the next query
 * over the same rows) parses each document once. No function here mutates a parsed value.
 * Bounded by the texts' total length (cleared past it); long texts are not kept.
 */
const parsed = new Map<string, unknown>();
let parsedChars = 0;
const PARSED_MAX_CHARS = 16 * 1024 * 1024;

/** A SQL value read as JSON: text is parsed, numbers are themselves. */
function parse(v: Exclude<Value, null>): unknown {
  if (typeof v !== 'string') return v;
  const hit = parsed.get(v);
  if (hit !== undefined) return hit;
  let j: unknown;
  try {
    j = parseJsonExact(v);
  } catch {
    return malformed();
  }
  if (v.length <= 4096) {
    if (parsedChars + v.length > PARSED_MAX_CHARS) { parsed.clear(); parsedChars = 0; }
    parsed.set(v, j);
    parsedChars += v.length;
  }
  return j;
}

function text(j: unknown): string {
  if (isLosslessNumber(j)) return j.value;
  return stringifyJson(j);
}

/** JSON → SQL value as json_extract and ->> answer it. */
function toSql(j: unknown): Value {
  if (j === null || j === undefined) return null;
  if (j === true) return 1n;
  if (j === false) return 0n;
  if (typeof j === 'bigint') return j;
  if (typeof j === 'number') return Number.isInteger(j) && Math.abs(j) < 9.2e18 ? realToInt(j) : j;
  if (typeof j === 'string') return j;
  if (isLosslessNumber(j)) return Number(j.value);
  return text(j);
}

/**
 * The elements of a JSON value as SQL values (the `unnest` node): an array's elements in order,
 * any other JSON value itself, SQL NULL none. Each as `json_extract` answers it.
 */
export function jsonElements(v: Value): Value[] {
  if (v === null) return [];
  const j = parse(v);
  return Array.isArray(j) ? j.map(toSql) : [toSql(j)];
}

type Step = string | number | { fromEnd: number };

const pathCache = new Map<string, Step[]>();

/** A JSON path `$`, `$.a.b`, `$."a b"`, `$[2]`, `$[#-1]` (SQLite's subset). */
function parsePath(p: string): Step[] {
  let steps = pathCache.get(p);
  if (steps) return steps;
  if (p[0] !== '$') throw new DbError('validation_failed', `bad JSON path: ${JSON.stringify(p)}`);
  steps = [];
  let i = 1;
  while (i < p.length) {
    if (p[i] === '.') {
      i++;
      if (p[i] === '"') {
        const end = p.indexOf('"', i + 1);
        if (end < 0) throw new DbError('validation_failed', `bad JSON path: ${JSON.stringify(p)}`);
        steps.push(p.slice(i + 1, end));
        i = end + 1;
      } else {
        let j = i;
        while (j < p.length && p[j] !== '.' && p[j] !== '[') j++;
        steps.push(p.slice(i, j));
        i = j;
      }
    } else if (p[i] === '[') {
      const end = p.indexOf(']', i);
      const inner = end < 0 ? '' : p.slice(i + 1, end);
      const m = /^#-(\d+)$/.exec(inner);
      if (m) steps.push({ fromEnd: Number(m[1]) });
      else if (/^\d+$/.test(inner)) steps.push(Number(inner));
      else if (inner === '#') steps.push({ fromEnd: 0 });
      else throw new DbError('validation_failed', `bad JSON path: ${JSON.stringify(p)}`);
      i = end + 1;
    } else throw new DbError('validation_failed', `bad JSON path: ${JSON.stringify(p)}`);
  }
  if (pathCache.size > 1000) pathCache.clear();
  pathCache.set(p, steps);
  return steps;
}

/** The element at a path, or undefined when absent. */
function walk(j: unknown, steps: Step[]): unknown {
  let cur = j;
  for (const s of steps) {
    if (typeof s === 'string') {
      if (cur === null || typeof cur !== 'object' || Array.isArray(cur) || isLosslessNumber(cur)) return undefined;
      if (!Object.prototype.hasOwnProperty.call(cur, s)) return undefined;
      cur = (cur as Record<string, unknown>)[s];
    } else {
      if (!Array.isArray(cur)) return undefined;
      const k = typeof s === 'number' ? s : cur.length - s.fromEnd;
      if (k < 0 || k >= cur.length) return undefined;
      cur = cur[k];
    }
  }
  return cur;
}

/** The right operand of -> / ->>: a path, a label (`'a'` is `$.a`) or an integer (`$[n]`). */
function arrowPath(v: Exclude<Value, null>): Step[] {
  if (typeof v === 'bigint' || typeof v === 'number') return [Number(v) < 0 ? { fromEnd: -Number(v) } : Number(v)];
  return v.startsWith('$') ? parsePath(v) : [v];
}

function typeOf(j: unknown): string {
  if (j === null) return 'null';
  if (j === true) return 'true';
  if (j === false) return 'false';
  if (typeof j === 'bigint') return 'integer';
  if (typeof j === 'number') return Number.isInteger(j) ? 'integer' : 'real';
  if (isLosslessNumber(j)) return 'real';
  if (typeof j === 'string') return 'text';
  return Array.isArray(j) ? 'array' : 'object';
}

const extract: Fn = (a) => {
  if (a[0] === null || a.slice(1).some((v) => v === null)) return null;
  const j = parse(a[0]);
  if (a.length === 2) return toSql(walk(j, parsePath(toText(a[1])!)));
  return text(a.slice(1).map((p) => walk(j, parsePath(toText(p)!)) ?? null));
};

export const JSON_FUNCTIONS: Record<string, { min: number; max: number; fn: Fn }> = {
  json: { min: 1, max: 1, fn: (a) => (a[0] === null ? null : text(parse(a[0]))) },
  json_valid: {
    min: 1, max: 1,
    fn: (a) => {
      if (a[0] === null) return null;
      try {
        parse(a[0]);
        return 1n;
      } catch {
        return 0n;
      }
    },
  },
  json_type: {
    min: 1, max: 2,
    fn: (a) => {
      if (a[0] === null || (a.length > 1 && a[1] === null)) return null;
      const j = a.length > 1 ? walk(parse(a[0]), parsePath(toText(a[1])!)) : parse(a[0]);
      return j === undefined ? null : typeOf(j);
    },
  },
  json_extract: { min: 2, max: Infinity, fn: extract },
  // a TEXT argument is a JSON string (as in SQLite for text that does not come from json())
  json_array: { min: 0, max: Infinity, fn: (a) => text(a) },
  json_object: {
    min: 0, max: Infinity,
    fn: (a) => {
      if (a.length % 2) throw new DbError('validation_failed', 'json_object() requires an even number of arguments');
      const o: Record<string, unknown> = {};
      for (let i = 0; i < a.length; i += 2) {
        if (typeof a[i] !== 'string') throw new DbError('validation_failed', 'json_object() labels must be TEXT');
        Object.defineProperty(o, a[i] as string, { value: a[i + 1], enumerable: true, writable: true, configurable: true });
      }
      return text(o);
    },
  },
  json_array_length: {
    min: 1, max: 2,
    fn: (a) => {
      if (a[0] === null || (a.length > 1 && a[1] === null)) return null;
      const j = a.length > 1 ? walk(parse(a[0]), parsePath(toText(a[1])!)) : parse(a[0]);
      if (j === undefined) return null;
      return Array.isArray(j) ? BigInt(j.length) : 0n;
    },
  },
  // X -> P: the subcomponent as JSON text; X ->> P: as a SQL value (json_extract's answer)
  '->': {
    min: 2, max: 2,
    fn: (a) => {
      if (a[0] === null || a[1] === null) return null;
      const j = walk(parse(a[0]), arrowPath(a[1]));
      return j === undefined ? null : text(j);
    },
  },
  '->>': {
    min: 2, max: 2,
    fn: (a) => (a[0] === null || a[1] === null ? null : toSql(walk(parse(a[0]), arrowPath(a[1])))),
  },
};
