/**
 * The acting user's `Policy` for the plan executor (libs/sql run/sources.ts): every leaf of every
 * plan (SQL, /query, the vector / full-text / graph routes, subqueries) is checked for a read
 * grant (403 `forbidden` without one) and filtered by the user's row-level security predicates
 * (`using`, AND-ed), placed below every operator so WHERE, JOIN, GROUP BY, ORDER BY, aggregates,
 * top-k and explain never see a hidden row.
 *
 * A predicate is SQL text bound against the table (`SELECT * FROM <schema> AS <alias> WHERE
 * <pred>`): `current_user()` is the user's name and `user_attr('k')` its attribute `k` (NULL when
 * unset), both substituted as literals before parsing, so the bound predicate is a constant
 * expression of the user (cached per user and catalogue version with the plan).
 */
import { DbError } from '@mmdb/core';
import { andAll, type Expr, type PlanNode } from '@mmdb/plan';
import { parseSql, type LeafNode, type Policy, type SqlEngine } from '@mmdb/sql';
import type { Acting, ColumnMask } from './catalog';

const sqlString = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** The predicate text with the session functions replaced by literals of the acting user. */
export function sessionText(pred: string, a: Acting): string {
  return pred
    .replace(/\bcurrent_user\s*\(\s*\)/gi, sqlString(a.name))
    .replace(/\buser_attr\s*\(\s*'((?:[^']|'')*)'\s*\)/gi, (_, k: string) => {
      const v = a.record?.attributes[k.replace(/''/g, "'")];
      return v === undefined ? 'NULL' : sqlString(v);
    });
}

/** Renames `from.x` column references to `to.x` (or `x` when `to` is empty), deeply. */
function renameCols<T>(v: T, from: string, to: string): T {
  if (Array.isArray(v)) return v.map((x) => renameCols(x, from, to)) as T;
  if (!v || typeof v !== 'object') return v;
  const o = v as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(o)) out[k] = renameCols(x, from, to);
  if (o.kind === 'col' && typeof o.name === 'string' && o.name.startsWith(from + '.')) out.name = (to ? to + '.' : '') + o.name.slice(from.length + 1);
  if (typeof o.alias === 'string' && o.alias === from) out.alias = to; // not expected; keeps subqueries consistent
  return out as T;
}

/** Binds `pred` (SQL boolean text) over `schema`'s row: an Expr over columns `alias.col` (or bare names). */
export function bindPredicate(engine: SqlEngine, schema: string, pred: string, alias: string | undefined): Expr {
  const text = `SELECT * FROM "${schema.replace(/"/g, '""')}" AS __rls WHERE ${pred}`;
  let stmts;
  try {
    stmts = parseSql(text);
  } catch (e) {
    throw new DbError('validation_failed', `row-level security predicate of ${schema} does not parse: ${(e as Error).message}`);
  }
  if (stmts.length !== 1 || stmts[0].kind !== 'select') throw new DbError('validation_failed', `row-level security predicate of ${schema} must be one expression`);
  const { plan } = engine.bind(stmts[0]);
  let found: { pred: Expr; alias: string } | undefined;
  const walk = (n: PlanNode): void => {
    if (found) return;
    if (n.op === 'filter' && (n.input.op === 'scan' || n.input.op === 'get' || n.input.op === 'index_scan')) {
      found = { pred: n.predicate, alias: (n.input as { alias?: string }).alias ?? '' };
      return;
    }
    for (const v of Object.values(n)) if (v && typeof v === 'object' && typeof (v as PlanNode).op === 'string') walk(v as PlanNode);
  };
  walk(plan);
  if (!found) throw new DbError('validation_failed', `row-level security predicate of ${schema} did not bind to a row filter`);
  return renameCols(found.pred, found.alias, alias ?? '');
}

/** The SQL text of a mask over column `c` (quoted). */
export function maskSql(m: ColumnMask): string {
  const c = `"${m.column.replace(/"/g, '""')}"`;
  switch (m.kind) {
    case 'null': return 'NULL';
    case 'redact': return `CASE WHEN ${c} IS NULL THEN NULL ELSE '****' END`;
    case 'hash': return `sha256(${c})`;
    case 'partial': return `mask_partial(${c}, ${Math.max(1, m.n ?? 4)})`; // '****' || the last n characters, one call per row
    case 'expr': return `(${m.expr})`;
  }
}

/** Binds an SQL expression over `schema`'s row (as `SELECT expr FROM schema`): an Expr over the leaf's column names. */
export function bindExpr(engine: SqlEngine, schema: string, expr: string, alias: string | undefined): Expr {
  const stmts = parseSql(`SELECT ${expr} AS m FROM "${schema.replace(/"/g, '""')}" AS __rls`);
  if (stmts.length !== 1 || stmts[0].kind !== 'select') throw new DbError('validation_failed', `a column mask of ${schema} must be one expression`);
  const { plan } = engine.bind(stmts[0]);
  let found: { expr: Expr; alias: string } | undefined;
  const walk = (n: PlanNode): void => {
    if (found) return;
    if (n.op === 'project' && n.columns.length === 1 && n.input.op === 'scan') {
      found = { expr: n.columns[0].expr, alias: n.input.alias ?? '' };
      return;
    }
    for (const v of Object.values(n)) if (v && typeof v === 'object' && typeof (v as PlanNode).op === 'string') walk(v as PlanNode);
  };
  walk(plan);
  if (!found) throw new DbError('validation_failed', `a column mask of ${schema} did not bind to an expression`);
  return renameCols(found.expr, found.alias, alias ?? '');
}

function vectorColumn(engine: SqlEngine, schema: string): string | undefined {
  try {
    return engine.exec.table(schema).manifest.vector?.column;
  } catch {
    return undefined;
  }
}

/** The acting user's policy (never built for the owner: the owner runs with NO_POLICY). */
export function userPolicy(a: Acting, engine: SqlEngine): Policy {
  const memo = new Map<string, Expr | undefined>();
  const masks = new Map<string, Map<string, Expr> | undefined>();
  return {
    leafFilter(leaf: LeafNode): Expr | undefined {
      const schema = leaf.schema;
      a.require(schema, 'read');
      // matching or ranking by a masked column's stored value would reveal it: refused
      const masked = new Set(a.catalog.policiesFor(schema, a.name).flatMap((p) => (p.mask ? [p.mask.column.toLowerCase()] : [])));
      if (masked.size) {
        const over = leaf.op === 'fts_search' ? [leaf.field, ...(leaf.fields ?? []).map((f) => f.field)] : leaf.op === 'vector_topk' ? [leaf.column ?? vectorColumn(engine, schema)] : [];
        for (const c of over) if (c && masked.has(c.toLowerCase())) throw new DbError('forbidden', `column ${c} of ${schema} is masked for user ${a.name}: it cannot be searched`, { schema, column: c });
      }
      const alias = (leaf as { alias?: string }).alias;
      const key = `${schema}\u0000${alias ?? ''}`;
      if (memo.has(key)) return memo.get(key);
      const preds = a.catalog.policiesFor(schema, a.name).filter((p) => p.using !== undefined);
      const bound = preds.length ? andAll(preds.map((p) => bindPredicate(engine, schema, sessionText(p.using!, a), alias))) : undefined;
      // strictly true or false (NULL hides the row): a query's own conjuncts, which the optimizer
      // puts after it in the leaf's filter, are never evaluated on a hidden row (no error can tell of one)
      const f: Expr | undefined = bound && { kind: 'case', whens: [{ when: bound, then: { kind: 'lit', value: 1 } }], else: { kind: 'lit', value: 0 } };
      memo.set(key, f);
      return f;
    },
    writeCheck(schema: string): Expr | undefined {
      const key = `check\u0000${schema}`;
      if (memo.has(key)) return memo.get(key);
      const checks = a.catalog.policiesFor(schema, a.name).filter((p) => p.check !== undefined);
      const f = checks.length ? andAll(checks.map((p) => bindPredicate(engine, schema, sessionText(p.check!, a), undefined))) : undefined;
      memo.set(key, f);
      return f;
    },
    leafMasks(leaf: LeafNode): ReadonlyMap<string, Expr> | undefined {
      const schema = leaf.schema;
      const alias = (leaf as { alias?: string }).alias;
      const key = `${schema}\u0000${alias ?? ''}`;
      if (masks.has(key)) return masks.get(key);
      const ms = a.catalog.policiesFor(schema, a.name).filter((p) => p.mask !== undefined);
      let out: Map<string, Expr> | undefined;
      if (ms.length) {
        out = new Map();
        for (const p of ms) out.set((alias ? `${alias}.${p.mask!.column}` : p.mask!.column).toLowerCase(), bindExpr(engine, schema, sessionText(maskSql(p.mask!), a), alias));
      }
      masks.set(key, out);
      return out;
    },
  };
}
