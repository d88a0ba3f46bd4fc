import { DbError, JsonValue, Row, TableManifest } from '@mmdb/core';

/**
 * RFC 7396 JSON merge patch of a row (PATCH rows/{schema}/{pk}, apps/api/README.md):
 * a column the patch names takes the patch's value; a column it leaves out keeps its value.
 * `null` sets a column to NULL (a row's columns are fixed by its manifest, so "removing" one
 * means NULL; a required column is then `missing_required`). Inside a `json` column the patch
 * merges as RFC 7396 says: objects merge member by member, `null` removes a member, anything
 * else (arrays included) replaces.
 */
export function mergePatchRow(m: TableManifest, current: Row, patch: Record<string, unknown>): Row {
  const out: Row = { ...current };
  for (const [k, v] of Object.entries(patch)) {
    const col = m.columns.find((c) => c.name === k);
    if (!col) throw new DbError('validation_failed', `unknown column "${k}" in ${m.id}`, { field: k });
    out[k] = col.ty === 'json' ? (mergeValue(current[k] ?? null, v) as JsonValue) : (v as JsonValue);
  }
  return out;
}

/** RFC 7396 MergePatch(target, patch), section 2. */
export function mergeValue(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch;
  const out: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    // defineProperty: a member named "__proto__" stays a member (plain assignment would set the prototype)
    else Object.defineProperty(out, k, { value: mergeValue(Object.prototype.hasOwnProperty.call(out, k) ? out[k] : undefined, v), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}
