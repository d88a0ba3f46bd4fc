import { DbError } from '@mmdb/core';
import { NODE_KINDS, type PlanNode } from './node';
import { EXPR_KINDS, type Expr } from './expr';

type Field = 'node' | 'expr' | 'str' | 'num' | 'bool' | 'exprs' | 'strs' | 'named' | 'aggs' | 'keys' | 'rows' | 'ctes' | 'sets' | 'bound' | 'equi' | 'whens' | 'any';
type Spec = Record<string, Field | `${Field}?`>;

const NODE_SPECS: Record<string, Spec> = {
  scan: { schema: 'str', alias: 'str?', limit: 'num?' },
  get: { schema: 'str', alias: 'str?', key: 'exprs' },
  index_scan: { schema: 'str', alias: 'str?', index: 'str', prefix: 'exprs?', lower: 'bound?', upper: 'bound?', reverse: 'bool?', top: 'num?' },
  filter: { input: 'node', predicate: 'expr' },
  project: { input: 'node', columns: 'named' },
  join: { kind: 'str', left: 'node', right: 'node', on: 'expr?', equi: 'equi?', strategy: 'str?' },
  aggregate: { input: 'node', group: 'named', aggregates: 'aggs' },
  sort: { input: 'node', keys: 'keys', limit: 'num?' },
  limit: { input: 'node', limit: 'expr?', offset: 'expr?' },
  distinct: { input: 'node' },
  set_op: { kind: 'str', all: 'bool?', left: 'node', right: 'node' },
  values: { columns: 'strs', rows: 'rows' },
  with: { ctes: 'ctes', input: 'node' },
  cte_ref: { name: 'str', alias: 'str?' },
  insert: { schema: 'str', columns: 'strs', input: 'node', on_conflict: 'str?', returning: 'named?' },
  update: { schema: 'str', alias: 'str', input: 'node', set: 'sets', returning: 'named?' },
  delete: { schema: 'str', alias: 'str', input: 'node' },
};

const EXPR_SPECS: Record<string, Spec> = {
  lit: { value: 'any', real: 'bool?', int: 'bool?' },
  col: { name: 'str', affinity: 'str?', collation: 'str?' },
  param: { index: 'num' },
  unary: { op: 'str', arg: 'expr' },
  binary: { op: 'str', left: 'expr', right: 'expr' },
  like: { arg: 'expr', pattern: 'expr', escape: 'expr?', not: 'bool?', glob: 'bool?' },
  between: { arg: 'expr', low: 'expr', high: 'expr', not: 'bool?' },
  in_list: { arg: 'expr', list: 'exprs', not: 'bool?' },
  in_subquery: { arg: 'expr', plan: 'node', not: 'bool?' },
  exists: { plan: 'node', not: 'bool?' },
  subquery: { plan: 'node' },
  is_null: { arg: 'expr', not: 'bool?' },
  case: { operand: 'expr?', whens: 'whens', else: 'expr?' },
  cast: { arg: 'expr', to: 'str' },
  call: { name: 'str', args: 'exprs' },
  collate: { arg: 'expr', collation: 'str' },
};

const ENUMS: Record<string, readonly string[]> = {
  'join.kind': ['inner', 'left', 'right', 'full', 'cross', 'semi', 'anti'],
  'join.strategy': ['nested_loop', 'hash'],
  'set_op.kind': ['union', 'intersect', 'except'],
  'insert.on_conflict': ['error', 'replace', 'ignore'],
  'cast.to': ['integer', 'real', 'numeric', 'text', 'blob'],
  'col.affinity': ['integer', 'real', 'numeric', 'text', 'blob'],
  'col.collation': ['binary', 'nocase', 'rtrim'],
  'collate.collation': ['binary', 'nocase', 'rtrim'],
  'unary.op': ['-', '+', 'not', '~'],
  'binary.op': ['+', '-', '*', '/', '%', '||', '=', '<>', '<', '<=', '>', '>=', 'is', 'is not', 'and', 'or', '&', '|', '<<', '>>'],
};

function fail(path: string, msg: string): never {
  throw new DbError('validation_failed', `invalid plan at ${path}: ${msg}`, { path });
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function checkField(kind: string, owner: string, path: string, t: Field, v: unknown): void {
  switch (t) {
    case 'node': return void validateNode(v, path);
    case 'expr': return void validateExpr(v, path);
    case 'any': return;
    case 'str':
      if (typeof v !== 'string') fail(path, 'expected a string');
      if (ENUMS[`${owner}.${kind}`] && !ENUMS[`${owner}.${kind}`].includes(v)) fail(path, `expected one of ${ENUMS[`${owner}.${kind}`].join(', ')}`);
      return;
    case 'num': if (typeof v !== 'number' || !Number.isFinite(v)) fail(path, 'expected a number'); return;
    case 'bool': if (typeof v !== 'boolean') fail(path, 'expected a boolean'); return;
    case 'strs': arr(path, v).forEach((s, i) => typeof s !== 'string' && fail(`${path}[${i}]`, 'expected a string')); return;
    case 'exprs': arr(path, v).forEach((e, i) => validateExpr(e, `${path}[${i}]`)); return;
    case 'rows': arr(path, v).forEach((r, i) => arr(`${path}[${i}]`, r).forEach((e, j) => validateExpr(e, `${path}[${i}][${j}]`))); return;
    case 'named': return void arr(path, v).forEach((c, i) => obj(`${path}[${i}]`, c, { name: 'str', expr: 'expr' }));
    case 'sets': return void arr(path, v).forEach((c, i) => obj(`${path}[${i}]`, c, { column: 'str', expr: 'expr' }));
    case 'keys': return void arr(path, v).forEach((c, i) => obj(`${path}[${i}]`, c, { expr: 'expr', desc: 'bool?', nulls: 'str?' }));
    case 'aggs': return void arr(path, v).forEach((c, i) => obj(`${path}[${i}]`, c, { name: 'str', fn: 'str', args: 'exprs', distinct: 'bool?', star: 'bool?' }));
    case 'ctes': return void arr(path, v).forEach((c, i) => obj(`${path}[${i}]`, c, { name: 'str', columns: 'strs?', plan: 'node', recursive: 'bool?' }));
    case 'bound': return void obj(path, v, { value: 'expr', inclusive: 'bool' });
    case 'equi': return void arr(path, v).forEach((c, i) => obj(`${path}[${i}]`, c, { left: 'expr', right: 'expr' }));
    case 'whens': return void arr(path, v).forEach((c, i) => obj(`${path}[${i}]`, c, { when: 'expr', then: 'expr' }));
  }
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

/** Checks a JSON value is a well-formed plan; throws `validation_failed` naming the JSON path of the fault. */
export function validateNode(v: unknown, path = '$'): PlanNode {
  if (!isObj(v)) fail(path, 'expected a plan node object');
  if (typeof v.op !== 'string') fail(`${path}.op`, 'is required');
  if (!(NODE_KINDS as readonly string[]).includes(v.op)) fail(`${path}.op`, `unknown node "${v.op}" (one of ${NODE_KINDS.join(', ')})`);
  obj(path, v, NODE_SPECS[v.op], v.op);
  return v as unknown as PlanNode;
}

export function validateExpr(v: unknown, path = '$'): Expr {
  if (!isObj(v)) fail(path, 'expected an expression object');
  if (typeof v.kind !== 'string' || !(EXPR_KINDS as readonly string[]).includes(v.kind)) fail(`${path}.kind`, `expected one of ${EXPR_KINDS.join(', ')}`);
  obj(path, v, EXPR_SPECS[v.kind], v.kind);
  return v as unknown as Expr;
}

export const validatePlan = validateNode;
