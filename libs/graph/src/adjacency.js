"use strict";
/**
 * The read-optimised, in-memory form of one relation: node strings interned to
 * dense integer ids, and per node its outgoing (and incoming) edges as parallel
 * arrays. Traversals (traverse.ts) walk the integer arrays; strings are only
 * touched at the edges of a request.
 *
 * Writes are idempotent by (src, dst, owner): `put` upserts, `remove` removes if
 * present, so re-applying a frame already seen in a snapshot is harmless.
 */
Object.defineProperty(exports, "__esModule", { value: true });
exports.Adjacency = void 0;
class Adjacency {
    ids = new Map();
    /** Node string by id. */
    names = [];
    /** Outgoing edges by node id (undefined: none). */
    out = [];
    inn = [];
    edges = 0;
    get nodeCount() {
        return this.names.length;
    }
    get edgeCount() {
        return this.edges;
    }
    idOf(node) {
        return this.ids.get(node);
    }
    intern(node) {
        let id = this.ids.get(node);
        if (id === undefined) {
            id = this.names.length;
            this.ids.set(node, id);
            this.names.push(node);
            this.out.push(undefined);
            this.inn.push(undefined);
        }
        return id;
    }
    /** Adds the edge, or updates its weight/props when (src, dst, owner) is already there. */
    put(e) {
        const s = this.intern(e.src);
        const d = this.intern(e.dst);
        const o = (this.out[s] ??= { to: [], w: [] });
        const at = findEdge(o.to, o.owner, d, e.owner);
        const w = e.weight ?? NaN;
        if (at >= 0) {
            o.w[at] = w;
            if (e.props !== undefined || o.props)
                (o.props ??= new Array(o.to.length).fill(undefined))[at] = e.props;
            return;
        }
        this.append(e);
    }
    /** Adds an edge known to be new (bulk load from the store's unique keys): no duplicate scan. */
    append(e) {
        const s = this.intern(e.src);
        const d = this.intern(e.dst);
        const o = (this.out[s] ??= { to: [], w: [] });
        const n = o.to.length;
        o.to.push(d);
        o.w.push(e.weight ?? NaN);
        if (e.owner !== null || o.owner)
            (o.owner ??= new Array(n).fill(null)).push(e.owner);
        if (e.props !== undefined || o.props)
            (o.props ??= new Array(n).fill(undefined)).push(e.props);
        const i = (this.inn[d] ??= { from: [] });
        if (e.owner !== null || i.owner)
            (i.owner ??= new Array(i.from.length).fill(null)).push(e.owner);
        i.from.push(s);
        this.edges++;
    }
    /** Removes the edge (src, dst, owner) if present. */
    remove(src, dst, owner) {
        const s = this.ids.get(src);
        const d = this.ids.get(dst);
        if (s === undefined || d === undefined)
            return;
        const o = this.out[s];
        if (!o)
            return;
        const at = findEdge(o.to, o.owner, d, owner);
        if (at < 0)
            return;
        swapRemove(o.to, at);
        swapRemove(o.w, at);
        if (o.owner)
            swapRemove(o.owner, at);
        if (o.props)
            swapRemove(o.props, at);
        const i = this.inn[d];
        if (i) {
            const j = findEdge(i.from, i.owner, s, owner);
            if (j >= 0) {
                swapRemove(i.from, j);
                if (i.owner)
                    swapRemove(i.owner, j);
            }
        }
        this.edges--;
    }
    /** Distinct targets of `node`'s outgoing edges. */
    neighbors(node) {
        const id = this.ids.get(node);
        const o = id === undefined ? undefined : this.out[id];
        if (!o)
            return [];
        const names = this.names;
        if (!o.owner)
            return o.to.map((t) => names[t]);
        return [...new Set(o.to)].map((t) => names[t]);
    }
    /** Distinct sources of `node`'s incoming edges. */
    sources(node) {
        const id = this.ids.get(node);
        const i = id === undefined ? undefined : this.inn[id];
        if (!i)
            return [];
        const names = this.names;
        if (!i.owner)
            return i.from.map((f) => names[f]);
        return [...new Set(i.from)].map((f) => names[f]);
    }
}
exports.Adjacency = Adjacency;
function findEdge(ends, owners, end, owner) {
    for (let k = 0; k < ends.length; k++) {
        if (ends[k] === end && (owners ? owners[k] : null) === owner)
            return k;
    }
    return -1;
}
function swapRemove(a, at) {
    const last = a.length - 1;
    if (at !== last)
        a[at] = a[last];
    a.pop();
}
//# sourceMappingURL=adjacency.js.map