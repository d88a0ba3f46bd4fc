"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.REVERSE = exports.FORWARD = exports.EDGE_SPACE = void 0;
exports.ownerImplied = ownerImplied;
exports.keysIn = keysIn;
exports.edgesOfRow = edgesOfRow;
exports.forwardKey = forwardKey;
exports.reverseKey = reverseKey;
exports.encodeEdgeValue = encodeEdgeValue;
exports.decodeEdgeValue = decodeEdgeValue;
exports.edgeWrites = edgeWrites;
exports.schemaEdgeRange = schemaEdgeRange;
exports.relationRange = relationRange;
const storage_1 = require("@mmdb/storage");
const node_1 = require("./node");
exports.EDGE_SPACE = 'E';
exports.FORWARD = 'f';
exports.REVERSE = 'r';
/** True when the edge's row is identified by its two ends (no owner needed in the key). */
function ownerImplied(rel, manifest) {
    const src = rel.source_columns;
    if (!src)
        return true;
    return manifest.primary_key.every((c) => src.includes(c) || rel.columns.includes(c));
}
/** Node strings named by `cols` of a row: one composite key, or for one column a key or an array of keys. */
function keysIn(row, cols) {
    if (cols.length === 1) {
        const v = row[cols[0]];
        if (Array.isArray(v)) {
            const out = [];
            for (const e of v) {
                const n = (0, node_1.nodeOfValue)(e);
                if (n !== undefined)
                    out.push(n);
            }
            return out;
        }
        const n = (0, node_1.nodeOfValue)(v);
        return n === undefined ? [] : [n];
    }
    const tuple = [];
    for (const c of cols) {
        const v = row[c];
        if (v === null || v === undefined)
            return [];
        tuple.push(v);
    }
    return [(0, node_1.nodeOf)(tuple)];
}
/** The distinct edges a row makes under a relation of its manifest. */
function edgesOfRow(rel, manifest, pk, row) {
    const srcs = rel.source_columns ? keysIn(row, rel.source_columns) : [(0, node_1.nodeOf)(pk)];
    const dsts = keysIn(row, rel.columns);
    if (srcs.length === 0 || dsts.length === 0)
        return [];
    const owner = ownerImplied(rel, manifest) ? null : (0, node_1.nodeOf)(pk);
    const wv = rel.weight === undefined ? undefined : row[rel.weight];
    const weight = typeof wv === 'number' && Number.isFinite(wv) ? wv : undefined;
    const props = numericProps(rel, manifest, row);
    const seen = new Set();
    const out = [];
    for (const src of srcs) {
        for (const dst of dsts) {
            const id = `${src}\u0000${dst}`;
            if (seen.has(id))
                continue;
            seen.add(id);
            out.push({ src, dst, owner, ...(weight !== undefined ? { weight } : {}), ...(props ? { props } : {}) });
        }
    }
    return out;
}
function numericProps(rel, manifest, row) {
    let props;
    for (const c of manifest.columns) {
        if (c.ty !== 'i64' && c.ty !== 'f64')
            continue;
        if (c.name === rel.weight || manifest.primary_key.includes(c.name) || rel.columns.includes(c.name))
            continue;
        if (rel.source_columns?.includes(c.name))
            continue;
        const v = row[c.name];
        if (typeof v === 'number' && Number.isFinite(v))
            (props ??= {})[c.name] = v;
    }
    return props;
}
function forwardKey(schema, rel, e) {
    return (0, storage_1.keyOf)(exports.EDGE_SPACE, [schema, rel, exports.FORWARD, e.src, e.dst, e.owner]);
}
function reverseKey(schema, rel, e) {
    return (0, storage_1.keyOf)(exports.EDGE_SPACE, [schema, rel, exports.REVERSE, e.dst, e.src, e.owner]);
}
const EMPTY = Buffer.alloc(0);
function encodeEdgeValue(e) {
    if (e.weight === undefined && e.props === undefined)
        return EMPTY;
    const v = {};
    if (e.weight !== undefined)
        v.w = e.weight;
    if (e.props !== undefined)
        v.p = { ...e.props };
    return Buffer.from(JSON.stringify(v), 'utf8');
}
function decodeEdgeValue(b) {
    if (!b || b.length === 0)
        return {};
    const v = JSON.parse(Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8'));
    return { ...(v.w !== undefined ? { weight: v.w } : {}), ...(v.p !== undefined ? { props: v.p } : {}) };
}
/** Key writes turning the edges of `before` into those of `after` (forward and reverse). */
function edgeWrites(schema, rel, before, after) {
    const writes = [];
    const next = new Map();
    for (const e of after)
        next.set(edgeId(e), e);
    const prev = new Map();
    for (const e of before)
        prev.set(edgeId(e), e);
    for (const [id, e] of prev) {
        if (next.has(id))
            continue;
        writes.push({ key: forwardKey(schema, rel, e), value: null }, { key: reverseKey(schema, rel, e), value: null });
    }
    for (const [id, e] of next) {
        const value = encodeEdgeValue(e);
        const old = prev.get(id);
        if (old && encodeEdgeValue(old).equals(value))
            continue;
        writes.push({ key: forwardKey(schema, rel, e), value }, { key: reverseKey(schema, rel, e), value });
    }
    return writes;
}
function edgeId(e) {
    return `${e.src}\u0000${e.dst}\u0000${e.owner ?? ''}`;
}
/** [gte, lt) of every edge key a schema owns (all its relations, both directions). */
function schemaEdgeRange(schema) {
    const r = (0, storage_1.prefixRange)(exports.EDGE_SPACE, [schema]);
    return [r.gte, r.lt];
}
/** [gte, lt) of one relation's forward (or reverse) keys. */
function relationRange(schema, rel, dir) {
    return (0, storage_1.prefixRange)(exports.EDGE_SPACE, [schema, rel, dir]);
}
//# sourceMappingURL=edges.js.map