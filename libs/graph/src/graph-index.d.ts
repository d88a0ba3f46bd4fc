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
import { type Lsn, type RelationDef, type Row, type TableManifest } from '@mmdb/core';
import { type CommitParticipant, type CommittedFrame, type DeriveContext, type KeyWrite, type RowChangeEvent, type StoreReader } from '@mmdb/storage';
import { Adjacency } from './adjacency';
import { type DijkstraResult, type Visit } from './traverse';
/** Deepest BFS / path search a request may ask for. */
export declare const MAX_DEPTH = 64;
export declare const DEFAULT_DEPTH = 3;
/** A relation as the reader resolves it: where it is declared and what it links. */
export interface ResolvedRelation {
    /** The schema whose rows make the edges (where `[[relations]]` is declared). */
    readonly schema: string;
    readonly def: RelationDef;
}
export declare class GraphIndex implements CommitParticipant {
    readonly name = "graph";
    private reader?;
    private readonly rels;
    deriveRow(change: RowChangeEvent): readonly KeyWrite[];
    deriveSchema(manifest: TableManifest, previous: TableManifest | undefined, ctx: DeriveContext): Promise<readonly KeyWrite[]>;
    dropRanges(manifest: TableManifest): ReadonlyArray<readonly [Buffer, Buffer]>;
    /**
     * Keeps the store for lazy builds. Edges are durable keys written in each row's
     * frame and adjacencies are built from those keys on first use, so nothing needs
     * replaying: the state covers every frame there is.
     */
    open(store: StoreReader): Promise<Lsn>;
    /** Nothing to write (the edge keys are the durable state); covers every committed frame. */
    checkpoint(store: StoreReader): Promise<Lsn>;
    /** Gives the engine its store when it was not opened as a participant (apps/api EngineHooks). */
    attach(store: StoreReader): void;
    apply(frame: CommittedFrame): void;
    private forgetSchema;
    /**
     * Finds `rel` for a request on `schema`: declared on `schema`, or declared on an
     * edge table whose source is `schema`. Unknown schema → `schema_not_found`;
     * unknown relation → `not_found`.
     */
    resolve(schema: string, rel: string): ResolvedRelation;
    /** The adjacency of a relation, built from the store on first use. */
    adjacency(schema: string, rel: string): Promise<{
        relation: ResolvedRelation;
        adj: Adjacency;
    }>;
    private build;
    private store;
    /** Distinct neighbour node strings of `node` along `rel`. */
    neighbors(schema: string, rel: string, node: string): Promise<string[]>;
    /** Breadth-first visit from `src`, `depth` hops at most (0..MAX_DEPTH), the source first. */
    bfs(schema: string, rel: string, src: string, depth?: number): Promise<Visit[]>;
    /** Whether `dst` is reachable from `src` in at most `maxDepth` hops, with a fewest-hops path. */
    path(schema: string, rel: string, src: string, dst: string, maxDepth?: number): Promise<{
        reachable: boolean;
        path: string[];
    }>;
    /**
     * Least-weight path. Edge weight: `weights["<from>|<to>"]` if given, else the row's
     * `weightField` column (default: the relation's `weight` column), else 1.
     */
    dijkstra(schema: string, rel: string, src: string, dst: string, opts?: {
        weightField?: string;
        weights?: Readonly<Record<string, number>>;
    }): Promise<DijkstraResult>;
    /**
     * Rows of the relation's source table that point at `pk` (one hop inbound).
     * A self-relation (source = target) is refused: its direction is ambiguous.
     */
    reverse(schema: string, rel: string, pk: string): Promise<Row[]>;
}
//# sourceMappingURL=graph-index.d.ts.map