/**
 * Edges of one row under one relation, and their keys in the `E` keyspace.
 *
 * Key layout (tuple-encoded after the one-byte `E` prefix):
 *   forward  E ‖ (schema, rel, 'f', src, dst, owner)  → value
 *   reverse  E ‖ (schema, rel, 'r', dst, src, owner)  → value
 * `schema` is the table that declares the relation (whose rows make the edges),
 * `owner` the node string of that row when (src, dst) alone does not identify it
 * (an edge table whose key is not just its two ends), else null.
 * Value: empty, or JSON `{ "w": weight?, "p": { numeric column: value }? }`.
 */
import type { RelationDef, Row, TableManifest } from '@mmdb/core';
import { type KeyWrite, type PkTuple } from '@mmdb/storage';
export declare const EDGE_SPACE = "E";
export declare const FORWARD = "f";
export declare const REVERSE = "r";
export interface Edge {
    readonly src: string;
    readonly dst: string;
    /** Node string of the row that makes the edge, when (src, dst) does not imply it. */
    readonly owner: string | null;
    /** The manifest's weight column, when set and a finite number. */
    readonly weight?: number;
    /** Other numeric (i64/f64) columns of that row, for `weight_field`. */
    readonly props?: Readonly<Record<string, number>>;
}
/** True when the edge's row is identified by its two ends (no owner needed in the key). */
export declare function ownerImplied(rel: RelationDef, manifest: TableManifest): boolean;
/** Node strings named by `cols` of a row: one composite key, or for one column a key or an array of keys. */
export declare function keysIn(row: Row, cols: readonly string[]): string[];
/** The distinct edges a row makes under a relation of its manifest. */
export declare function edgesOfRow(rel: RelationDef, manifest: TableManifest, pk: PkTuple, row: Row): Edge[];
export declare function forwardKey(schema: string, rel: string, e: Pick<Edge, 'src' | 'dst' | 'owner'>): Buffer;
export declare function reverseKey(schema: string, rel: string, e: Pick<Edge, 'src' | 'dst' | 'owner'>): Buffer;
export declare function encodeEdgeValue(e: Edge): Buffer;
export declare function decodeEdgeValue(b: Uint8Array | undefined): {
    weight?: number;
    props?: Record<string, number>;
};
/** Key writes turning the edges of `before` into those of `after` (forward and reverse). */
export declare function edgeWrites(schema: string, rel: string, before: readonly Edge[], after: readonly Edge[]): KeyWrite[];
/** [gte, lt) of every edge key a schema owns (all its relations, both directions). */
export declare function schemaEdgeRange(schema: string): readonly [Buffer, Buffer];
/** [gte, lt) of one relation's forward (or reverse) keys. */
export declare function relationRange(schema: string, rel: string, dir: typeof FORWARD | typeof REVERSE): {
    gte: Buffer;
    lt: Buffer;
};
//# sourceMappingURL=edges.d.ts.map