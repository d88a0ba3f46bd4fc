/**
 * The shape of every node and expression kind, one table each, typed over the closed kind
 * unions: the validator checks JSON against them and the walkers (walk.ts) find the expressions
 * and subplans of a node through them, so a new kind is one entry here plus its node file.
 */
import type { NodeKind } from './node';
import type { Expr } from './expr';

export type Field =
  | 'node' | 'nodes' | 'expr' | 'str' | 'num' | 'numnull' | 'bool' | 'exprs' | 'strs' | 'nums' | 'named' | 'aggs' | 'keys'
  | 'rows' | 'ctes' | 'sets' | 'bound' | 'equi' | 'whens' | 'any' | 'ftsq' | 'fields' | 'ranking' | 'weights' | 'wfuncs'
  | 'frame' | 'fbound' | 'meta';
export type Spec = Readonly<Record<string, Field | `${Field}?`>>;
export type ExprKind = Expr['kind'];

export const NODE_SPECS: { readonly [K in NodeKind]: Spec } = {
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
  fts_search: { schema: 'str', alias: 'str?', field: 'str?', fields: 'fields?', query: 'ftsq', limit: 'numnull?', ranking: 'ranking?', filter: 'expr?', keys_only: 'bool?', unordered: 'bool?', no_score: 'bool?' },
  vector_topk: { schema: 'str', alias: 'str?', column: 'str?', vector: 'expr', k: 'num', mode: 'str?', metric: 'str?', filter: 'expr?', metadata: 'meta?' },
  graph_expand: { input: 'node?', schema: 'str', rel: 'str', from: 'expr', direction: 'str?', min_depth: 'num?', max_depth: 'numnull?', alias: 'str?', emit_path: 'bool?', row_columns: 'bool?', filter: 'expr?', start_filter: 'expr?' },
  graph_path: { schema: 'str', rel: 'str', src: 'expr', dst: 'expr', max_depth: 'num?', direction: 'str?', alias: 'str?', row_columns: 'bool?', filter: 'expr?', start_filter: 'expr?' },
  graph_dijkstra: { schema: 'str', rel: 'str', src: 'expr', dst: 'expr', weight_field: 'str?', weights: 'weights?', alias: 'str?', row_columns: 'bool?', filter: 'expr?', start_filter: 'expr?' },
  fuse: { inputs: 'nodes', method: 'str', key: 'strs', k: 'num?', weights: 'nums?', scores: 'strs?', normalization: 'str?', limit: 'num?' },
  window: { input: 'node', functions: 'wfuncs' },
  unnest: { input: 'node', expr: 'expr', as: 'str', affinity: 'str?', distinct: 'bool?', outer: 'bool?' },
};

export const EXPR_SPECS: { readonly [K in ExprKind]: Spec } = {
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

/** Shapes of the objects inside list fields. */
export const SUB_SPECS = {
  named: { name: 'str', expr: 'expr' },
  sets: { column: 'str', expr: 'expr' },
  keys: { expr: 'expr', desc: 'bool?', nulls: 'str?' },
  aggs: { name: 'str', fn: 'str', args: 'exprs', distinct: 'bool?', star: 'bool?' },
  ctes: { name: 'str', columns: 'strs?', plan: 'node', recursive: 'bool?' },
  bound: { value: 'expr', inclusive: 'bool' },
  equi: { left: 'expr', right: 'expr' },
  whens: { when: 'expr', then: 'expr' },
  fields: { field: 'str', boost: 'num?' },
  ranking: { feedback: 'str?', proximity: 'str?', query_stopwords: 'str?' },
  wfuncs: { name: 'str', fn: 'str', args: 'exprs', star: 'bool?', distinct: 'bool?', filter: 'expr?', partition: 'exprs', order: 'keys', frame: 'frame?' },
  frame: { unit: 'str', start: 'fbound', end: 'fbound', exclude: 'str?' },
  fbound: { type: 'str', offset: 'expr?' },
} as const;

/** Allowed values of string fields, by `owner.field`. */
export const ENUMS: Readonly<Record<string, readonly string[]>> = {
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
  'keys.nulls': ['first', 'last'],
  'vector_topk.mode': ['fast', 'high_recall'],
  'vector_topk.metric': ['cosine', 'dot', 'l2', 'manhattan'],
  'graph_expand.direction': ['forward', 'reverse', 'both'],
  'graph_path.direction': ['forward', 'reverse', 'both'],
  'fuse.method': ['rrf', 'weighted'],
  'fuse.normalization': ['min_max', 'z_score'],
  'ranking.feedback': ['none', 'rm3'],
  'ranking.proximity': ['none', 'bm25tp'],
  'ranking.query_stopwords': ['none', 'auto'],
  'frame.unit': ['rows', 'range', 'groups'],
  'frame.exclude': ['no_others', 'current_row', 'group', 'ties'],
  'fbound.type': ['unbounded_preceding', 'preceding', 'current_row', 'following', 'unbounded_following'],
};
