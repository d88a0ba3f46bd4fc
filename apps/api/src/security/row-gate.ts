/**
 * Row-level security on the row routes (which read and write the store directly, not through
 * the plan executor): the same policy, run as a plan on the tenant's executor.
 * - GET of a row the user's USING predicates hide: 404 `row_not_found`, exactly as if absent.
 * - PUT / PATCH / DELETE onto an existing hidden row: 403 `forbidden` (the write may not touch it).
 * - A written row that fails a WITH CHECK predicate: 403 `forbidden` (nothing is written).
 */
import { DbError, type JsonValue } from '@mmdb/core';
import { andAll, type Expr, type PlanNode } from '@mmdb/plan';
import { rowObject, type SqlEngine } from '@mmdb/sql';
import type { TenantHandle } from '../tenancy/tenant-registry';
import type { Acting } from './catalog';
import { bindPredicate, sessionText, userPolicy } from './policy';

function engineOf(t: TenantHandle): SqlEngine {
  const e = t.engine<{ engine?: SqlEngine }>('sql').engine;
  if (!e) throw new DbError('service_unavailable', 'SQL engine not attached yet');
  return e;
}

const param = (i: number): Expr => ({ kind: 'param', index: i + 1 });

/** Whether a row is visible to the acting user (true for the owner and when no USING policy binds). */
export async function rowVisible(t: TenantHandle, a: Acting | undefined, schema: string, pk: JsonValue[]): Promise<boolean> {
  if (!a || a.isOwner || !a.catalog.policiesFor(schema, a.name).some((p) => p.using !== undefined)) return true;
  const engine = engineOf(t);
  const plan: PlanNode = { op: 'get', schema, key: pk.map((_, i) => param(i)) };
  const r = await engine.runPlan(plan, { params: pk, policy: userPolicy(a, engine), policyKey: `${a.name}#${a.catalog.version}` });
  return r.rows.length > 0;
}

/** Whether column masks bind the user on the schema (a row GET then answers the masked row). */
export function hasMasks(a: Acting | undefined, schema: string): boolean {
  return !!a && !a.isOwner && a.catalog.policiesFor(schema, a.name).some((p) => p.mask !== undefined);
}

/** The row as the user sees it (masked, or null when absent or hidden), read through the executor under its policy. */
export async function maskedRow(t: TenantHandle, a: Acting, schema: string, pk: JsonValue[]): Promise<Record<string, JsonValue> | null> {
  const engine = engineOf(t);
  const plan: PlanNode = { op: 'get', schema, key: pk.map((_, i) => param(i)) };
  const r = await engine.runPlan(plan, { params: pk, policy: userPolicy(a, engine), policyKey: `${a.name}#${a.catalog.version}` });
  if (!r.rows.length) return null;
  return rowObject(engine.exec.table(schema), r.rows[0]);
}

/** Rows checked per plan run (a fixed shape, so the check plan is prepared once and cached). */
const CHECK_CHUNK = 64;

/** 403 unless every row passes the user's WITH CHECK predicates on the schema. */
export async function checkRows(t: TenantHandle, a: Acting | undefined, schema: string, rows: readonly Record<string, unknown>[], first = 0): Promise<void> {
  if (!a || a.isOwner || !rows.length) return;
  const checks = a.catalog.policiesFor(schema, a.name).filter((p) => p.check !== undefined);
  if (!checks.length) return;
  const engine = engineOf(t);
  const columns = engine.exec.table(schema).manifest.columns.map((c) => c.name);
  const pred = andAll(checks.map((p) => bindPredicate(engine, schema, sessionText(p.check!, a), undefined)))!;
  // CHECK_CHUNK rows of parameters and their index; the rows that pass come back by index
  const w = columns.length;
  const values: PlanNode = { op: 'values', columns: [...columns, '__row'], rows: Array.from({ length: CHECK_CHUNK }, (_, r) => [...columns.map((_, j) => param(r * w + j)), { kind: 'lit', value: r }]) };
  const plan: PlanNode = { op: 'project', input: { op: 'filter', input: values, predicate: pred }, columns: [{ name: '__row', expr: { kind: 'col', name: '__row' } }] };
  for (let base = 0; base < rows.length; base += CHECK_CHUNK) {
    const params: JsonValue[] = [];
    for (let r = 0; r < CHECK_CHUNK; r++) {
      const row = rows[Math.min(base + r, rows.length - 1)]; // the last chunk repeats its last row
      for (const c of columns) params.push(row[c] === undefined ? null : (row[c] as JsonValue));
    }
    const res = await engine.runPlan(plan, { params, policyKey: `check:${a.name}#${a.catalog.version}` });
    const passed = new Set(res.rows.map((x) => Number(x[0])));
    for (let r = 0; r < CHECK_CHUNK && base + r < rows.length; r++) {
      const i = first + base + r;
      if (!passed.has(r)) throw new DbError('forbidden', `row ${i} fails the row-level security check of ${schema} for user ${a.name}`, { schema, index: i });
    }
  }
}

/** The WITH CHECK of rows a route writes in parts (NDJSON chunks, a PATCH's merged row), or undefined when none binds. */
export function rowChecker(t: TenantHandle, a: Acting | undefined, schema: string): ((rows: readonly Record<string, unknown>[], first?: number) => Promise<void>) | undefined {
  if (!hasCheck(a, schema)) return undefined;
  return (rows, first = 0) => checkRows(t, a, schema, rows, first);
}

/** The user is bound by a WITH CHECK predicate on the schema (routes that cannot check each row refuse). */
export function hasCheck(a: Acting | undefined, schema: string): boolean {
  return !!a && !a.isOwner && a.catalog.policiesFor(schema, a.name).some((p) => p.check !== undefined);
}
