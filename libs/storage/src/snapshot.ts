/** Reads from one explicit classic-level snapshot: point gets, pk and index range scans. */
import type { ClassicLevel } from 'classic-level';
import { DbError, TableManifest } from '@mmdb/core';
import type { PkTuple, ScanOptions, Snapshot, StoredRow } from './api';
import { KEYSPACE, decodeTuple, keyOf, prefixEnd } from './keys';
import { decodeRow, keyIdOf, maintainedIndexes, pkOfIndexEntry, rowKey } from './records';

export type Db = ClassicLevel<Buffer, Buffer>;
type LevelSnapshot = ReturnType<Db['snapshot']>;

/** Turns tuple bounds inside a key prefix into [gte|gt, lt|lte] byte bounds. */
export function boundsFor(space: string, head: readonly unknown[], o: ScanOptions): { gte?: Buffer; gt?: Buffer; lt?: Buffer; lte?: Buffer } {
  const base = [...head, ...(o.prefix ?? [])] as PkTuple;
  const k = (t: PkTuple) => keyOf(space, [...base, ...t]);
  const r: { gte?: Buffer; gt?: Buffer; lt?: Buffer; lte?: Buffer } = {};
  r.gte = o.gte ? k(o.gte) : o.gt ? prefixEnd(k(o.gt)) : keyOf(space, base);
  r.lt = o.lt ? k(o.lt) : o.lte ? prefixEnd(k(o.lte)) : prefixEnd(keyOf(space, base));
  return r;
}

export class LevelSnapshotReader implements Snapshot {
  private released = false;

  readonly lsn: number;
  readonly stable: boolean;
  private readonly tableLsns: ReadonlyMap<string, number>;

  constructor(
    private readonly db: Db,
    private readonly snap: LevelSnapshot,
    private readonly manifestOf: (schema: string) => TableManifest | undefined,
    at: { lsn: number; stable: boolean; tableLsns: ReadonlyMap<string, number> } = { lsn: 0, stable: false, tableLsns: new Map() },
    /** What release does with the LevelDB snapshot (a shared one: drops this reader's hold). */
    private readonly letGo: () => Promise<void> | void = () => snap.close(),
  ) {
    this.lsn = at.lsn;
    this.stable = at.stable;
    this.tableLsns = at.tableLsns;
  }

  tableLsn(schema: string): number {
    return this.tableLsns.get(schema) ?? 0;
  }

  private manifest(schema: string): TableManifest {
    const m = this.manifestOf(schema);
    if (!m) throw new DbError('schema_not_found', `no schema is registered as "${schema}"`);
    return m;
  }

  private live(): void {
    if (this.released) throw new DbError('internal_error', 'snapshot read after release');
  }

  async getRow(schema: string, pk: PkTuple): Promise<StoredRow | undefined> {
    this.live();
    const m = this.manifestOf(schema);
    const v = await this.db.get(rowKey(m ? keyIdOf(m) : schema, pk), { snapshot: this.snap });
    return v === undefined ? undefined : decodeRow(schema, pk, v);
  }

  async *scanRows(schema: string, opts: ScanOptions = {}): AsyncIterable<StoredRow[]> {
    this.live();
    const id = keyIdOf(this.manifest(schema));
    const headLen = keyOf(KEYSPACE.row, [id]).length;
    const it = this.db.iterator({ ...boundsFor(KEYSPACE.row, [id], opts), reverse: !!opts.reverse, limit: opts.limit ?? -1, snapshot: this.snap });
    try {
      for (;;) {
        const entries = await it.nextv(opts.batchSize ?? 256);
        if (entries.length === 0) return;
        yield entries.map(([k, v]) => decodeRow(schema, decodeTuple(k, headLen), v));
      }
    } finally {
      await it.close();
    }
  }

  async *scanIndex(schema: string, index: string, opts: ScanOptions = {}): AsyncIterable<StoredRow[]> {
    this.live();
    const m = this.manifest(schema);
    const idx = maintainedIndexes(m).find((i) => i.name === index);
    if (!idx) throw new DbError('not_found', `schema "${schema}" has no index "${index}"`);
    const id = keyIdOf(m);
    const headLen = keyOf(KEYSPACE.index, [id, index]).length;
    const it = this.db.iterator({ ...boundsFor(KEYSPACE.index, [id, index], opts), reverse: !!opts.reverse, limit: opts.limit ?? -1, snapshot: this.snap });
    try {
      for (;;) {
        const entries = await it.nextv(opts.batchSize ?? 256);
        if (entries.length === 0) return;
        const pks = entries.map(([k, v]) => pkOfIndexEntry(k, v, headLen, idx.columns.length));
        const vals = await this.db.getMany(pks.map((pk) => rowKey(id, pk)), { snapshot: this.snap });
        const rows: StoredRow[] = [];
        vals.forEach((v, i) => {
          if (v !== undefined) rows.push(decodeRow(schema, pks[i], v));
        });
        yield rows;
      }
    } finally {
      await it.close();
    }
  }

  async rawGet(key: Buffer): Promise<Buffer | undefined> {
    this.live();
    return this.db.get(key, { snapshot: this.snap });
  }

  async rawGetMany(keys: readonly Buffer[]): Promise<Array<Buffer | undefined>> {
    this.live();
    if (keys.length === 0) return [];
    return this.db.getMany(keys as Buffer[], { snapshot: this.snap });
  }

  async *rawRange(opts: { gte: Buffer; lt: Buffer; reverse?: boolean; limit?: number; batchSize?: number }): AsyncIterable<Array<[Buffer, Buffer]>> {
    this.live();
    const it = this.db.iterator({ gte: opts.gte, lt: opts.lt, reverse: !!opts.reverse, limit: opts.limit ?? -1, snapshot: this.snap });
    try {
      for (;;) {
        const entries = await it.nextv(opts.batchSize ?? 256);
        if (entries.length === 0) return;
        yield entries as Array<[Buffer, Buffer]>;
      }
    } finally {
      await it.close();
    }
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    await this.letGo();
  }
}
