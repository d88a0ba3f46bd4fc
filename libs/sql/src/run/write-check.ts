/**
 * The Policy port's WITH CHECK on writes: every new row an INSERT (VALUES, SELECT, OR REPLACE)
 * or UPDATE writes must pass the acting user's check predicate of its table, or the statement
 * fails with 403 `forbidden` before it is committed (one commit per statement or per
 * BEGIN…COMMIT script, so nothing of it is written). The predicate is compiled once per statement
 * and table, then evaluated on each new row as the store will keep it.
 */
import { DbError } from '@mmdb/core';
import type { ExecCtx } from '../exec/context';
import { ExprCompiler } from '../exec/expr';
import { leafColumns } from '../exec/ops';
import { Scope } from '../exec/scope';
import { truthy, type Tuple } from '../values';
import type { Policy } from './sources';

export type RowCheck = (schema: string, row: Tuple) => void;

export function writeChecker(policy: Policy, ctx: () => ExecCtx): RowCheck | undefined {
  const check = policy.writeCheck?.bind(policy);
  if (!check) return undefined;
  const compiled = new Map<string, ((r: Tuple) => boolean) | null>();
  return (schema, row) => {
    let f = compiled.get(schema);
    if (f === undefined) {
      const e = check(schema);
      if (e) {
        const c = ctx();
        const g = new ExprCompiler(c).compile(e, new Scope(leafColumns(c, schema, undefined)));
        f = (r) => truthy(g(r, null)) === true;
      } else f = null;
      compiled.set(schema, f);
    }
    if (f && !f(row)) throw new DbError('forbidden', `a row written to ${schema} fails the row-level security check (WITH CHECK) of the acting user`, { schema });
  };
}
