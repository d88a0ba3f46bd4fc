/**
 * Small builders for JSON plan trees (libs/plan/README.md) and their expressions.
 *
 * @example
 *   const p = plan.scan('app.users').filter(expr.gt('age', 30)).sort('age', 'desc').limit(10).node;
 *   const rows = await db.query(p);
 */
export type Expr = { readonly kind: string; readonly [k: string]: unknown };
export type PlanNode = { readonly op: string; readonly [k: string]: unknown };

export const expr = {
  col: (name: string): Expr => ({ kind: 'col', name }),
  lit: (value: unknown): Expr => ({ kind: 'lit', value }),
  param: (n: number): Expr => ({ kind: 'param', index: n }),
  bin: (op: string, left: Expr | string, right: Expr | unknown): Expr => ({ kind: 'binary', op, left: asCol(left), right: asLit(right) }),
  eq: (l: Expr | string, r: unknown) => expr.bin('=', l, r),
  ne: (l: Expr | string, r: unknown) => expr.bin('!=', l, r),
  gt: (l: Expr | string, r: unknown) => expr.bin('>', l, r),
  gte: (l: Expr | string, r: unknown) => expr.bin('>=', l, r),
  lt: (l: Expr | string, r: unknown) => expr.bin('<', l, r),
  lte: (l: Expr | string, r: unknown) => expr.bin('<=', l, r),
  and: (...xs: Expr[]): Expr => xs.reduce((a, b) => ({ kind: 'binary', op: 'and', left: a, right: b })),
  or: (...xs: Expr[]): Expr => xs.reduce((a, b) => ({ kind: 'binary', op: 'or', left: a, right: b })),
  like: (l: Expr | string, pattern: string): Expr => ({ kind: 'like', arg: asCol(l), pattern: asLit(pattern) }),
  isNull: (l: Expr | string): Expr => ({ kind: 'is_null', arg: asCol(l) }),
};

function asCol(x: Expr | string): Expr {
  return typeof x === 'string' ? expr.col(x) : x;
}
function asLit(x: unknown): Expr {
  return x && typeof x === 'object' && 'kind' in (x as object) ? (x as Expr) : expr.lit(x);
}

/** A chainable wrapper; `.node` is the plain plan object to send. */
export class PlanBuilder {
  constructor(readonly node: PlanNode) {}
  filter(predicate: Expr): PlanBuilder {
    return new PlanBuilder({ op: 'filter', input: this.node, predicate });
  }
  project(columns: Record<string, Expr | string> | string[]): PlanBuilder {
    const cols = Array.isArray(columns) ? columns.map((c) => ({ name: c, expr: expr.col(c) })) : Object.entries(columns).map(([name, e]) => ({ name, expr: asCol(e) }));
    return new PlanBuilder({ op: 'project', input: this.node, columns: cols });
  }
  sort(col: Expr | string, dir: 'asc' | 'desc' = 'asc'): PlanBuilder {
    return new PlanBuilder({ op: 'sort', input: this.node, keys: [{ expr: asCol(col), desc: dir === 'desc' }] });
  }
  limit(n: number, offset?: number): PlanBuilder {
    return new PlanBuilder({ op: 'limit', input: this.node, limit: expr.lit(n), ...(offset !== undefined ? { offset: expr.lit(offset) } : {}) });
  }
  distinct(): PlanBuilder {
    return new PlanBuilder({ op: 'distinct', input: this.node });
  }
  count(name = 'count', group: string[] = []): PlanBuilder {
    return new PlanBuilder({ op: 'aggregate', input: this.node, group: group.map((g) => ({ name: g, expr: expr.col(g) })), aggregates: [{ name, fn: 'count', args: [], star: true }] });
  }
  join(right: PlanBuilder | PlanNode, on: Expr, kind: 'inner' | 'left' | 'right' | 'full' = 'inner'): PlanBuilder {
    return new PlanBuilder({ op: 'join', kind, left: this.node, right: right instanceof PlanBuilder ? right.node : right, on });
  }
  toJSON(): PlanNode {
    return this.node;
  }
}

export const plan = {
  scan: (schema: string, alias?: string) => new PlanBuilder({ op: 'scan', schema, ...(alias ? { alias } : {}) }),
  get: (schema: string, key: unknown[]) => new PlanBuilder({ op: 'get', schema, key: key.map((k) => expr.lit(k)) }),
};
