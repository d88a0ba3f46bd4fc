/**
 * Graph nodes are primary-key strings. One rule turns a key tuple into its node
 * string and back, so the HTTP layer, the edge keys and the adjacency agree.
 *
 * - A single-column key: the value as text. `"alice"` → `alice`, `42` → `42`,
 *   `true` → `true` (numbers use JavaScript's shortest round-trip form).
 * - A composite key: the JSON text of the tuple, without spaces: `["eu",7]`.
 *
 * @example
 *   nodeOf(['alice']);        // 'alice'
 *   nodeOf([42]);             // '42'
 *   nodeOf(['eu', 7]);        // '["eu",7]'
 *   tupleOfNode('42', manifest_with_i64_pk); // [42]
 */
import { DbError, parseJsonExact, parseNumberLiteral, stringifyJson, type JsonValue, type TableManifest } from '@mmdb/core';

/** The node string of a primary-key tuple (or of a single key value). */
export function nodeOf(tuple: readonly JsonValue[]): string {
  if (tuple.length === 1) return scalarText(tuple[0]);
  return stringifyJson(tuple);
}

/** The node string of one key value read from a row column (null/undefined → no node). */
export function nodeOfValue(v: JsonValue | undefined): string | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'object') return Array.isArray(v) ? stringifyJson(v) : undefined;
  return scalarText(v);
}

function scalarText(v: JsonValue): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return stringifyJson(v);
}

/**
 * The primary-key tuple of `node` in a table, typed by the key columns
 * (throws `validation_failed` when the text cannot be such a key).
 */
export function tupleOfNode(node: string, manifest: TableManifest): JsonValue[] {
  const cols = manifest.primary_key.map((name) => manifest.columns.find((c) => c.name === name));
  if (cols.length === 1) return [typedScalar(node, cols[0]?.ty, manifest.id)];
  let parsed: unknown;
  try {
    parsed = parseJsonExact(node);
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== cols.length) {
    throw new DbError('validation_failed', `node "${node}" is not a key of ${manifest.id}: a composite key is written as a JSON array of ${cols.length} values`);
  }
  return parsed as JsonValue[];
}

function typedScalar(text: string, ty: string | undefined, schema: string): JsonValue {
  switch (ty) {
    case 'i64':
    case 'f64':
    case 'timestamp': {
      // an i64 beyond ±2^53 is a bigint (exact), as the row holds it
      const n = ty === 'i64' && /^-?\d+$/.test(text) ? parseNumberLiteral(text) : Number(text);
      if (text.trim() === '' || (typeof n === 'number' && !Number.isFinite(n))) throw new DbError('validation_failed', `node "${text}" is not a numeric key of ${schema}`);
      return n as number | bigint;
    }
    case 'bool':
      if (text !== 'true' && text !== 'false') throw new DbError('validation_failed', `node "${text}" is not a boolean key of ${schema}`);
      return text === 'true';
    default:
      return text;
  }
}
