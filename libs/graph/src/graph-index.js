"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.GraphIndex = exports.DEFAULT_DEPTH = exports.MAX_DEPTH = void 0;
/**
 * The graph engine of one tenant store: a `CommitParticipant` that derives edge
 * keys in the row's frame, and the reader that serves traversals from an
 * in-memory adjacency per relation (built lazily from the `E` keys, then kept
 * current from applied frames).
 *
 * @example
 *   const graph = new GraphIndex();
 *   const store = await TenantStore.open({ dir, participants: [graph] });
 *   await store.registerSchema(toml);          // with [[relations]] name = "cites" ...
 *   await store.put('lib.papers', { id: 'a', cites: ['b', 'c'] });
 *   await graph.neighbors('lib.papers', 'cites', 'a'); // ['b', 'c']
 */
const core_1 = require("@mmdb/core");
const storage_1 = require("@mmdb/storage");
const adjacency_1 = require("./adjacency");
const edges_1 = require("./edges");
const node_1 = require("./node");
const traverse_1 = require("./traverse");
/** Deepest BFS / path search a request may ask for. */
exports.MAX_DEPTH = 64;
exports.DEFAULT_DEPTH = 3;
const E_BYTE = edges_1.EDGE_SPACE.charCodeAt(0);
const ROW_SPACE = 'R';
class GraphIndex {
    name = 'graph';
    reader;
    rels = new Map();
    // ---- participant: writes -------------------------------------------------
    deriveRow(change) {
        const m = change.manifest;
        if (m.relations.length === 0)
            return [];
        const writes = [];
        for (const rel of m.relations) {
            const before = change.before ? (0, edges_1.edgesOfRow)(rel, m, change.pk, change.before.values) : [];
            const after = change.after ? (0, edges_1.edgesOfRow)(rel, m, change.pk, change.after.values) : [];
            writes.push(...(0, edges_1.edgeWrites)(m.id, rel.name, before, after));
        }
        return writes;
    }
    async deriveSchema(manifest, previous, ctx) {
        for (const rel of manifest.relations)
            checkRelation(manifest, rel, ctx);
        if (!previous || sameRelations(previous, manifest))
            return [];
        // Relations changed on a table that may hold rows: rewrite its edges from its rows.
        const writes = [];
        const [gte, lt] = (0, edges_1.schemaEdgeRange)(manifest.id);
        for (const [key] of await ctx.range({ gte, lt }))
            writes.push({ key, value: null });
        if (manifest.relations.length === 0)
            return writes;
        const rows = (0, storage_1.prefixRange)(ROW_SPACE, [manifest.id]);
        const fresh = new Map();
        for (const [key] of await ctx.range(rows)) {
            const pk = (0, storage_1.decodeKey)(key).slice(1);
            const row = await ctx.getRow(manifest.id, pk);
            if (!row)
                continue;
            for (const rel of manifest.relations) {
                for (const w of (0, edges_1.edgeWrites)(manifest.id, rel.name, [], (0, edges_1.edgesOfRow)(rel, manifest, pk, row.values)))
                    fresh.set(w.key.toString('latin1'), w);
            }
        }
        const out = writes.filter((w) => !fresh.has(w.key.toString('latin1')));
        out.push(...fresh.values());
        return out;
    }
    dropRanges(manifest) {
        return [(0, edges_1.schemaEdgeRange)(manifest.id)];
    }
    // ---- participant: frames and open -----------------------------------------
    /**
     * Keeps the store for lazy builds. Edges are durable keys written in each row's
     * frame and adjacencies are built from those keys on first use, so nothing needs
     * replaying: the state covers every frame there is.
     */
    async open(store) {
        this.reader = store;
        return Number.MAX_SAFE_INTEGER;
    }
    /** Nothing to write (the edge keys are the durable state); covers every committed frame. */
    async checkpoint(store) {
        return store.lastLsn;
    }
    /** Gives the engine its store when it was not opened as a participant (apps/api EngineHooks). */
    attach(store) {
        this.reader ??= store;
    }
    apply(frame) {
        for (const c of frame.changes) {
            if (c.op === 'schema_put' || c.op === 'schema_drop')
                this.forgetSchema(c.schema);
        }
        if (this.rels.size === 0)
            return;
        for (const w of frame.writes) {
            if (w.key[0] !== E_BYTE)
                continue;
            const t = (0, storage_1.decodeKey)(w.key);
            if (t[2] !== edges_1.FORWARD)
                continue;
            const st = this.rels.get(relKey(t[0], t[1]));
            if (!st)
                continue;
            if (st.adj)
                applyWrite(st.adj, t, w.value);
            else
                st.pending?.push(w);
        }
    }
    forgetSchema(schema) {
        for (const k of [...this.rels.keys()])
            if (k.startsWith(`${schema}\u0000`))
                this.rels.delete(k);
    }
    // ---- reader --------------------------------------------------------------
    /**
     * Finds `rel` for a request on `schema`: declared on `schema`, or declared on an
     * edge table whose source is `schema`. Unknown schema → `schema_not_found`;
     * unknown relation → `not_found`.
     */
    resolve(schema, rel) {
        const manifests = this.store().manifests();
        const m = manifests.find((x) => x.id === schema);
        if (!m)
            throw new core_1.DbError('schema_not_found', `schema "${schema}" is not registered`, { schema });
        const own = m.relations.find((r) => r.name === rel);
        if (own)
            return { schema, def: own };
        for (const other of manifests) {
            const r = other.relations.find((x) => x.name === rel && x.source === schema);
            if (r)
                return { schema: other.id, def: r };
        }
        throw new core_1.DbError('not_found', `relation "${rel}" is not declared on schema "${schema}" (nor on an edge table whose source is it)`, {
            schema,
            rel,
        });
    }
    /** The adjacency of a relation, built from the store on first use. */
    async adjacency(schema, rel) {
        const relation = this.resolve(schema, rel);
        const key = relKey(relation.schema, relation.def.name);
        const def = JSON.stringify(relation.def);
        let st = this.rels.get(key);
        if (!st || st.def !== def) {
            st = { def };
            this.rels.set(key, st);
        }
        if (st.adj)
            return { relation, adj: st.adj };
        st.building ??= this.build(key, st, relation);
        return { relation, adj: await st.building };
    }
    async build(key, st, relation) {
        st.pending = [];
        // The snapshot is taken after `pending` starts collecting, so every frame is
        // either in the snapshot, in `pending`, or both (applying twice is harmless).
        const snap = this.store().snapshot();
        const adj = new adjacency_1.Adjacency();
        try {
            const { gte, lt } = (0, edges_1.relationRange)(relation.schema, relation.def.name, edges_1.FORWARD);
            for await (const batch of snap.rawRange({ gte, lt, batchSize: 4096 })) {
                for (const [k, v] of batch) {
                    const t = (0, storage_1.decodeKey)(k);
                    const val = (0, edges_1.decodeEdgeValue)(v);
                    adj.append({ src: t[3], dst: t[4], owner: t[5], ...val });
                }
            }
        }
        catch (e) {
            if (this.rels.get(key) === st)
                this.rels.delete(key);
            throw e;
        }
        finally {
            await snap.release();
        }
        for (const w of st.pending)
            applyWrite(adj, (0, storage_1.decodeKey)(w.key), w.value);
        st.pending = undefined;
        st.adj = adj;
        st.building = undefined;
        return adj;
    }
    store() {
        if (!this.reader)
            throw new core_1.DbError('internal_error', 'graph index is not attached to a store');
        return this.reader;
    }
    /** Distinct neighbour node strings of `node` along `rel`. */
    async neighbors(schema, rel, node) {
        const { adj } = await this.adjacency(schema, rel);
        return adj.neighbors(node);
    }
    /** Breadth-first visit from `src`, `depth` hops at most (0..MAX_DEPTH), the source first. */
    async bfs(schema, rel, src, depth = exports.DEFAULT_DEPTH) {
        checkDepth(depth, 'depth');
        const { adj } = await this.adjacency(schema, rel);
        return (0, traverse_1.bfs)(adj, src, depth);
    }
    /** Whether `dst` is reachable from `src` in at most `maxDepth` hops, with a fewest-hops path. */
    async path(schema, rel, src, dst, maxDepth = exports.MAX_DEPTH) {
        checkDepth(maxDepth, 'max_depth');
        const { adj } = await this.adjacency(schema, rel);
        const p = (0, traverse_1.shortestPath)(adj, src, dst, maxDepth);
        return p ? { reachable: true, path: p } : { reachable: false, path: [] };
    }
    /**
     * Least-weight path. Edge weight: `weights["<from>|<to>"]` if given, else the row's
     * `weightField` column (default: the relation's `weight` column), else 1.
     */
    async dijkstra(schema, rel, src, dst, opts = {}) {
        const overrides = opts.weights ? checkWeights(opts.weights) : undefined;
        const { relation, adj } = await this.adjacency(schema, rel);
        const field = opts.weightField === undefined || opts.weightField === relation.def.weight ? undefined : opts.weightField;
        const out = adj.out;
        const names = adj.names;
        const base = field === undefined
            ? (u, k) => out[u].w[k]
            : (u, k) => {
                const p = out[u].props?.[k];
                const v = p?.[field];
                return v === undefined ? NaN : v;
            };
        const weight = overrides
            ? (u, k) => {
                const o = overrides.get(`${names[u]}|${names[out[u].to[k]]}`);
                return o === undefined ? base(u, k) : o;
            }
            : base;
        return (0, traverse_1.dijkstra)(adj, src, dst, weight);
    }
    /**
     * Rows of the relation's source table that point at `pk` (one hop inbound).
     * A self-relation (source = target) is refused: its direction is ambiguous.
     */
    async reverse(schema, rel, pk) {
        const relation = this.resolve(schema, rel);
        if (relation.def.source === relation.def.target) {
            throw new core_1.DbError('validation_failed', `relation "${rel}" links ${relation.def.source} to itself: reverse traversal is only defined when the source and target tables differ (use neighbors on the relation instead)`, { rel });
        }
        const { adj } = await this.adjacency(schema, rel);
        const sources = adj.sources(pk);
        const sm = this.store().manifests().find((m) => m.id === relation.def.source);
        if (!sm || sources.length === 0)
            return [];
        const snap = this.store().snapshot();
        try {
            const rows = [];
            for (const s of sources) {
                let tuple;
                try {
                    tuple = (0, node_1.tupleOfNode)(s, sm);
                }
                catch {
                    continue; // a key text that cannot be a key of the source table names no row
                }
                const r = await snap.getRow(sm.id, tuple);
                if (r)
                    rows.push(r.values);
            }
            return rows;
        }
        finally {
            await snap.release();
        }
    }
}
exports.GraphIndex = GraphIndex;
function relKey(schema, rel) {
    return `${schema}\u0000${rel}`;
}
function applyWrite(adj, t, value) {
    const src = t[3];
    const dst = t[4];
    const owner = t[5];
    if (value === null)
        adj.remove(src, dst, owner);
    else
        adj.put({ src, dst, owner, ...(0, edges_1.decodeEdgeValue)(value) });
}
function checkDepth(d, name) {
    if (!Number.isInteger(d) || d < 0 || d > exports.MAX_DEPTH) {
        throw new core_1.DbError('validation_failed', `${name} must be an integer from 0 to ${exports.MAX_DEPTH}, got ${d}`, { field: name });
    }
}
function checkWeights(weights) {
    const m = new Map();
    for (const [k, v] of Object.entries(weights)) {
        if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
            throw new core_1.DbError('validation_failed', `weights_json["${k}"] must be a finite number >= 0, got ${JSON.stringify(v)}`, { field: 'weights_json' });
        }
        if (!k.includes('|'))
            throw new core_1.DbError('validation_failed', `weights_json key "${k}" must be "<from>|<to>"`, { field: 'weights_json' });
        m.set(k, v);
    }
    return m;
}
function sameRelations(a, b) {
    return JSON.stringify(a.relations) === JSON.stringify(b.relations) && JSON.stringify(a.primary_key) === JSON.stringify(b.primary_key);
}
/** Semantic checks beyond the grammar: key arity against registered tables. */
function checkRelation(m, rel, ctx) {
    const where = `relations "${rel.name}"`;
    const target = rel.target === m.id ? m : ctx.manifest(rel.target);
    if (target && target.primary_key.length !== rel.columns.length) {
        throw new core_1.DbError('validation_failed', `manifest: ${where}: columns has ${rel.columns.length} column(s) but ${rel.target} has a ${target.primary_key.length}-column primary key (a composite target key needs one column per key part)`, { key: `${where}.columns` });
    }
    if (rel.source_columns) {
        const source = rel.source === m.id ? m : ctx.manifest(rel.source);
        if (source && source.primary_key.length !== rel.source_columns.length) {
            throw new core_1.DbError('validation_failed', `manifest: ${where}: source_columns has ${rel.source_columns.length} column(s) but ${rel.source} has a ${source.primary_key.length}-column primary key`, { key: `${where}.source_columns` });
        }
    }
    else if (rel.source !== m.id) {
        throw new core_1.DbError('validation_failed', `manifest: ${where}: source must be this table unless source_columns names the edge table's source key`, {
            key: `${where}.source`,
        });
    }
}
//# sourceMappingURL=graph-index.js.map