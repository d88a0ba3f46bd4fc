import { DbError, type JsonValue, type Row } from '@mmdb/core';
import { SqlEngine, toJson } from '@mmdb/sql';
import type { TenantStore } from '@mmdb/storage';

const quote = (s: string) => `"${s.replace(/"/g, '""')}"`;

/**
 * A `change_type … using <expr>` value for one source row, evaluated by the SQL engine over
 * the stored row (`SELECT <expr> FROM <table> WHERE <pk> = …`), so `using` means what it
 * means in SQL: the same functions, casts and NULL rules. The row is read at its latest
 * version; the backfill frame that writes the result is built from the same snapshot row
 * unless a write landed in between, in which case the cutover frame rewrites it again.
 */
export async function sqlRowEvaluator(sql: SqlEngine, store: TenantStore, schema: string, expr: string, row: Row): Promise<JsonValue> {
  const m = store.manifest(schema);
  if (!m) throw new DbError('schema_not_found', `no schema is registered as "${schema}"`, { schema });
  const where = m.primary_key.map((c, i) => `${quote(c)} = $${i + 1}`).join(' AND ');
  const [res] = await sql.run(`SELECT ${expr} FROM ${quote(m.id)} WHERE ${where}`, { params: m.primary_key.map((c) => row[c] ?? null) });
  if (!res || res.kind !== 'select') throw new DbError('validation_failed', `using: not an expression: ${expr}`);
  if (!res.rows.length) return null;
  return toJson(res.rows[0][0] as never) as JsonValue;
}

/** Every row's `[pk, [value of each expr]]` in one `SELECT <pk>, <exprs> FROM <table>` (the cutover). */
export async function sqlTableEvaluator(sql: SqlEngine, store: TenantStore, schema: string, exprs: readonly string[]): Promise<Array<[JsonValue[], JsonValue[]]>> {
  const m = store.manifest(schema);
  if (!m) throw new DbError('schema_not_found', `no schema is registered as "${schema}"`, { schema });
  const cols = [...m.primary_key.map(quote), ...exprs.map((e) => `(${e})`)].join(', ');
  const [res] = await sql.run(`SELECT ${cols} FROM ${quote(m.id)}`, { maxRows: Number.MAX_SAFE_INTEGER });
  if (!res || res.kind !== 'select') throw new DbError('validation_failed', `using: not expressions: ${exprs.join(', ')}`);
  const k = m.primary_key.length;
  return res.rows.map((t) => [t.slice(0, k).map((v) => toJson(v as never) as JsonValue), t.slice(k).map((v) => toJson(v as never) as JsonValue)]);
}
