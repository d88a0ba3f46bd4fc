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
import { type JsonValue, type TableManifest } from '@mmdb/core';
/** The node string of a primary-key tuple (or of a single key value). */
export declare function nodeOf(tuple: readonly JsonValue[]): string;
/** The node string of one key value read from a row column (null/undefined → no node). */
export declare function nodeOfValue(v: JsonValue | undefined): string | undefined;
/**
 * The primary-key tuple of `node` in a table, typed by the key columns
 * (throws `validation_failed` when the text cannot be such a key).
 */
export declare function tupleOfNode(node: string, manifest: TableManifest): JsonValue[];
//# sourceMappingURL=node.d.ts.map