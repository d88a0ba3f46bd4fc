"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.nodeOf = nodeOf;
exports.nodeOfValue = nodeOfValue;
exports.tupleOfNode = tupleOfNode;
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
const core_1 = require("@mmdb/core");
/** The node string of a primary-key tuple (or of a single key value). */
function nodeOf(tuple) {
    if (tuple.length === 1)
        return scalarText(tuple[0]);
    return JSON.stringify(tuple);
}
/** The node string of one key value read from a row column (null/undefined → no node). */
function nodeOfValue(v) {
    if (v === null || v === undefined)
        return undefined;
    if (typeof v === 'object')
        return Array.isArray(v) ? JSON.stringify(v) : undefined;
    return scalarText(v);
}
function scalarText(v) {
    if (typeof v === 'string')
        return v;
    if (typeof v === 'number' || typeof v === 'boolean')
        return String(v);
    return JSON.stringify(v);
}
/**
 * The primary-key tuple of `node` in a table, typed by the key columns
 * (throws `validation_failed` when the text cannot be such a key).
 */
function tupleOfNode(node, manifest) {
    const cols = manifest.primary_key.map((name) => manifest.columns.find((c) => c.name === name));
    if (cols.length === 1)
        return [typedScalar(node, cols[0]?.ty, manifest.id)];
    let parsed;
    try {
        parsed = JSON.parse(node);
    }
    catch {
        parsed = undefined;
    }
    if (!Array.isArray(parsed) || parsed.length !== cols.length) {
        throw new core_1.DbError('validation_failed', `node "${node}" is not a key of ${manifest.id}: a composite key is written as a JSON array of ${cols.length} values`);
    }
    return parsed;
}
function typedScalar(text, ty, schema) {
    switch (ty) {
        case 'i64':
        case 'f64':
        case 'timestamp': {
            const n = Number(text);
            if (text.trim() === '' || !Number.isFinite(n))
                throw new core_1.DbError('validation_failed', `node "${text}" is not a numeric key of ${schema}`);
            return n;
        }
        case 'bool':
            if (text !== 'true' && text !== 'false')
                throw new core_1.DbError('validation_failed', `node "${text}" is not a boolean key of ${schema}`);
            return text === 'true';
        default:
            return text;
    }
}
//# sourceMappingURL=node.js.map