import { DbError } from '@mmdb/core';
import { NODE_KINDS, type PlanNode } from './node';
import { EXPR_KINDS, type Expr } from './expr';
import { ENUMS, EXPR_SPECS, NODE_SPECS, SUB_SPECS, type Field, type Spec } from './specs';

function fail(path: string, msg: string): never {
  throw new DbError('validation_failed', `invalid plan at ${path}: ${msg}`, { path });
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function checkField(key: string, owner: string, path: string, t: Field, v: unknown): void {
  switch (t) {
    case 'node': return void validateNode(v, path);
    case 'nodes':
      if (arr(path, v).length === 0) fail(path, 'expected at least one plan');
      return void (v as unknown[]).forEach((n, i) => validateNode(n, `${path}[${i}]`));
    case 'expr': return void validateExpr(v, path);
    case 'any': return;
    case 'str': {
      if (typeof v !== 'string') fail(path, 'expected a string');
      const allowed = ENUMS[`${owner}.${key}`];
      if (allowed && !allowed.includes(v)) fail(path, `expected one of ${allowed.join(', ')}`);
      return;
    }
    case 'num': if (typeof v !== 'number' || !Number.isFinite(v)) fail(path, 'expected a number'); return;
    case 'numnull': if (v !== null && (typeof v !== 'number' || !Number.isFinite(v))) fail(path, 'expected a number or null'); return;
    case 'bool': if (typeof v !== 'boolean') fail(path, 'expected a boolean'); return;
    case 'strs': arr(path, v).forEach((s, i) => typeof s !== 'string' && fail(`${path}[${i}]`, 'expected a string')); return;
    case 'nums': arr(path, v).forEach((s, i) => (typeof s !== 'number' || !Number.isFinite(s)) && fail(`${path}[${i}]`, 'expected a number')); return;
    case 'exprs': arr(path, v).forEach((e, i) => validateExpr(e, `${path}[${i}]`)); return;
    case 'rows': arr(path, v).forEach((r, i) => arr(`${path}[${i}]`, r).forEach((e, j) => validateExpr(e, `${path}[${i}][${j}]`))); return;
    case 'weights':
      if (!isObj(v)) fail(path, 'expected an object of numbers');
      for (const [k, x] of Object.entries(v)) if (typeof x !== 'number' || !Number.isFinite(x)) fail(`${path}.${k}`, 'expected a number');
      return;
    case 'meta':
      if (!isObj(v)) fail(path, 'expected an object of metadata equalities');
      return;
    case 'ftsq':
      if (typeof v === 'string') return;
      // an expression without columns: a `$n` (bound to query text or a structured query), a literal, `'"' || $1 || '"'`
      if (isObj(v) && 'kind' in v) return void validateExpr(v, path);
      return void ftsQuery(path, v);
    case 'ranking': case 'bound': case 'frame': case 'fbound':
      return void obj(path, v, SUB_SPECS[t], t);
    case 'named': case 'sets': case 'keys': case 'aggs': case 'ctes': case 'equi': case 'whens': case 'fields': case 'wfuncs':
      return void arr(path, v).forEach((c, i) => obj(`${path}[${i}]`, c, SUB_SPECS[t], t));
  }
}

function ftsQuery(path: string, v: unknown): void {
  if (!isObj(v)) fail(path, 'expected a query string or a structured query object');
  const keys = Object.keys(v);
  if ('terms' in v) {
    arr(`${path}.terms`, v.terms).forEach((s, i) => typeof s !== 'string' && fail(`${path}.terms[${i}]`, 'expected a string'));
    if (v.operator !== undefined && v.operator !== 'or' && v.operator !== 'and') fail(`${path}.operator`, 'expected one of or, and');
    return only(path, keys, ['terms', 'operator']);
  }
  if ('phrase' in v) {
    if (typeof v.phrase !== 'string') fail(`${path}.phrase`, 'expected a string');
    if (v.slop !== undefined && (!Number.isInteger(v.slop) || (v.slop as number) < 0)) fail(`${path}.slop`, 'expected a non-negative integer');
    return only(path, keys, ['phrase', 'slop']);
  }
  if ('prefix' in v) {
    if (typeof v.prefix !== 'string') fail(`${path}.prefix`, 'expected a string');
    return only(path, keys, ['prefix']);
  }
  if ('bool' in v) {
    only(path, keys, ['bool']);
    const b = v.bool;
    if (!isObj(b)) fail(`${path}.bool`, 'expected an object');
    for (const k of ['must', 'should', 'must_not'] as const) if (b[k] !== undefined) arr(`${path}.bool.${k}`, b[k]).forEach((q, i) => ftsQuery(`${path}.bool.${k}[${i}]`, q));
    const m = b.minimum_should_match;
    if (m !== undefined && !Number.isInteger(m)) fail(`${path}.bool.minimum_should_match`, 'expected an integer (negative: all but n)');
    const positive = ((b.must as unknown[] | undefined)?.length ?? 0) + ((b.should as unknown[] | undefined)?.length ?? 0);
    if (positive === 0) fail(`${path}.bool`, 'a bool needs at least one must or should clause');
    return only(`${path}.bool`, Object.keys(b), ['must', 'should', 'must_not', 'minimum_should_match']);
  }
  fail(path, 'expected one of terms, phrase, prefix, bool');
}

function only(path: string, keys: string[], allowed: string[]): void {
  const extra = keys.find((k) => !allowed.includes(k));
  if (extra) fail(`${path}.${extra}`, `unknown key (expected ${allowed.join(', ')})`);
}

function arr(path: string, v: unknown): unknown[] {
  if (!Array.isArray(v)) fail(path, 'expected an array');
  return v;
}

function obj(path: string, v: unknown, spec: Spec, owner = ''): void {
  if (!isObj(v)) fail(path, 'expected an object');
  for (const [k, t] of Object.entries(spec)) {
    const optional = t.endsWith('?');
    const ft = (optional ? t.slice(0, -1) : t) as Field;
    if (v[k] === undefined) {
      if (!optional) fail(`${path}.${k}`, 'is required');
      continue;
    }
    checkField(k, owner, `${path}.${k}`, ft, v[k]);
  }
}

const isInt = (v: unknown, lo: number, hi: number) => Number.isInteger(v) && (v as number) >= lo && (v as number) <= hi;

/** Checks of values a shape cannot say (ranges, lengths), with the JSON path of the fault. */
const RULES: Partial<Record<PlanNode['op'], (v: Record<string, unknown>, path: string) => void>> = {
  vector_topk: (v, path) => {
    if (!isInt(v.k, 0, 10_000)) fail(`${path}.k`, 'expected an integer from 0 to 10000');
  },
  fts_search: (v, path) => {
    if (v.field === undefined && v.fields === undefined) fail(`${path}.field`, 'is required (or fields)');
    if (Array.isArray(v.fields) && v.fields.length === 0) fail(`${path}.fields`, 'expected at least one field');
    if (v.limit !== undefined && v.limit !== null && !isInt(v.limit, 1, 1000)) fail(`${path}.limit`, 'expected an integer from 1 to 1000, or null (every match)');
  },
  graph_expand: (v, path) => {
    const min = v.min_depth ?? 1;
    if (!isInt(min, 0, 64)) fail(`${path}.min_depth`, 'expected an integer from 0 to 64');
    if (v.max_depth !== undefined && v.max_depth !== null && !isInt(v.max_depth, min as number, 64)) fail(`${path}.max_depth`, 'expected null (unbounded) or an integer from min_depth to 64');
  },
  graph_path: (v, path) => {
    if (v.max_depth !== undefined && !isInt(v.max_depth, 0, 64)) fail(`${path}.max_depth`, 'expected an integer from 0 to 64');
  },
  fuse: (v, path) => {
    if ((v.key as unknown[]).length === 0) fail(`${path}.key`, 'expected at least one key column');
    if (v.weights !== undefined && (v.weights as unknown[]).length !== (v.inputs as unknown[]).length) fail(`${path}.weights`, 'expected one weight per input');
    if (v.scores !== undefined && (v.scores as unknown[]).length !== (v.inputs as unknown[]).length) fail(`${path}.scores`, 'expected one score column per input');
    if (v.k !== undefined && !((v.k as number) >= 0)) fail(`${path}.k`, 'expected a number ≥ 0');
    if (v.limit !== undefined && !isInt(v.limit, 0, Number.MAX_SAFE_INTEGER)) fail(`${path}.limit`, 'expected a non-negative integer');
  },
  window: (v, path) => {
    if ((v.functions as unknown[]).length === 0) fail(`${path}.functions`, 'expected at least one function');
  },
  unnest: (v, path) => {
    if (v.affinity !== undefined && !['real', 'integer', 'text'].includes(v.affinity as string)) fail(`${path}.affinity`, 'expected real, integer or text');
    if (!(v.as as string).length) fail(`${path}.as`, 'expected a column name');
  },
};

/** Checks a JSON value is a well-formed plan; throws `validation_failed` naming the JSON path of the fault. */
export function validateNode(v: unknown, path = '$'): PlanNode {
  if (!isObj(v)) fail(path, 'expected a plan node object');
  if (typeof v.op !== 'string') fail(`${path}.op`, 'is required');
  if (!(NODE_KINDS as readonly string[]).includes(v.op)) fail(`${path}.op`, `unknown node "${v.op}" (one of ${NODE_KINDS.join(', ')})`);
  obj(path, v, NODE_SPECS[v.op as PlanNode['op']], v.op);
  RULES[v.op as PlanNode['op']]?.(v, path);
  return v as unknown as PlanNode;
}

export function validateExpr(v: unknown, path = '$'): Expr {
  if (!isObj(v)) fail(path, 'expected an expression object');
  if (typeof v.kind !== 'string' || !(EXPR_KINDS as readonly string[]).includes(v.kind)) fail(`${path}.kind`, `expected one of ${EXPR_KINDS.join(', ')}`);
  obj(path, v, EXPR_SPECS[v.kind as Expr['kind']], v.kind);
  return v as unknown as Expr;
}

export const validatePlan = validateNode;
