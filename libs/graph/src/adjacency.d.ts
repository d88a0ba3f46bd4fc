/**
 * The read-optimised, in-memory form of one relation: node strings interned to
 * dense integer ids, and per node its outgoing (and incoming) edges as parallel
 * arrays. Traversals (traverse.ts) walk the integer arrays; strings are only
 * touched at the edges of a request.
 *
 * Writes are idempotent by (src, dst, owner): `put` upserts, `remove` removes if
 * present, so re-applying a frame already seen in a snapshot is harmless.
 */
/** Outgoing edges of one node. `owner`/`props` exist only once some edge needs them. */
export interface OutEdges {
    to: number[];
    /** Weight from the manifest's weight column; NaN when the row had none. */
    w: number[];
    owner?: (string | null)[];
    props?: (Readonly<Record<string, number>> | undefined)[];
}
export interface EdgeInput {
    readonly src: string;
    readonly dst: string;
    readonly owner: string | null;
    readonly weight?: number;
    readonly props?: Readonly<Record<string, number>>;
}
export declare class Adjacency {
    private readonly ids;
    /** Node string by id. */
    readonly names: string[];
    /** Outgoing edges by node id (undefined: none). */
    readonly out: (OutEdges | undefined)[];
    private readonly inn;
    private edges;
    get nodeCount(): number;
    get edgeCount(): number;
    idOf(node: string): number | undefined;
    private intern;
    /** Adds the edge, or updates its weight/props when (src, dst, owner) is already there. */
    put(e: EdgeInput): void;
    /** Adds an edge known to be new (bulk load from the store's unique keys): no duplicate scan. */
    append(e: EdgeInput): void;
    /** Removes the edge (src, dst, owner) if present. */
    remove(src: string, dst: string, owner: string | null): void;
    /** Distinct targets of `node`'s outgoing edges. */
    neighbors(node: string): string[];
    /** Distinct sources of `node`'s incoming edges. */
    sources(node: string): string[];
}
//# sourceMappingURL=adjacency.d.ts.map