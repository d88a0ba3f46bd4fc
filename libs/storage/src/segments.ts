/**
 * Log segments: frames are numbered into segments of `framesPerSegment` LSNs
 * (segment n holds lsn n*size+1 … (n+1)*size). The index M ‖ ("segment", n) keeps
 * each segment's first and last LSN, frame count and bytes; it is written in the same
 * batch as the frames it counts. Replication reads from a segment onward; retention
 * drops whole segments.
 */
import type { Db } from './snapshot';
import { KEYSPACE, decodeTuple, keyOf, prefixRange } from './keys';
import { logKey, metaKey, parseJson } from './records';

export interface SegmentInfo {
  readonly segment: number;
  readonly first: number;
  readonly last: number;
  readonly frames: number;
  readonly bytes: number;
}

export class SegmentIndex {
  private readonly map = new Map<number, SegmentInfo>();

  /** Frames per segment: the store's own, fixed when it was created (see `load`). */
  private size: number;

  constructor(
    private readonly db: Db,
    framesPerSegment: number,
  ) {
    this.size = framesPerSegment;
  }

  get framesPerSegment(): number {
    return this.size;
  }

  segmentOf(lsn: number): number {
    return Math.floor((lsn - 1) / this.size);
  }

  /** First LSN a segment may hold. */
  firstLsnOf(segment: number): number {
    return segment * this.size + 1;
  }

  /**
   * Loads the index. The segment size is the one recorded when the store was created (segment
   * numbers are LSN / size, so a store keeps its size for life); a store without a record
   * records the size it was opened with.
   */
  async load(): Promise<void> {
    const stored = await this.db.get(metaKey('segment_size'));
    if (stored) this.size = parseJson<number>(stored);
    else await this.db.put(metaKey('segment_size'), Buffer.from(JSON.stringify(this.size)));
    const head = keyOf(KEYSPACE.meta, ['segment']).length;
    for (const [k, v] of await this.db.iterator(prefixRange(KEYSPACE.meta, ['segment'])).all()) {
      const n = Number(decodeTuple(k, head)[0]);
      this.map.set(n, parseJson<SegmentInfo>(v));
    }
  }

  list(): SegmentInfo[] {
    return [...this.map.values()].sort((a, b) => a.segment - b.segment);
  }

  /** Updates the index for a group's frames; returns the metadata writes for its batch. */
  record(frames: readonly { lsn: number; bytes: number }[]): Array<{ key: Buffer; value: Buffer | null }> {
    const touched = new Set<number>();
    for (const f of frames) {
      const n = this.segmentOf(f.lsn);
      const s = this.map.get(n);
      this.map.set(
        n,
        s
          ? { segment: n, first: Math.min(s.first, f.lsn), last: Math.max(s.last, f.lsn), frames: s.frames + 1, bytes: s.bytes + f.bytes }
          : { segment: n, first: f.lsn, last: f.lsn, frames: 1, bytes: f.bytes },
      );
      touched.add(n);
    }
    return [...touched].map((n) => ({ key: metaKey('segment', n), value: Buffer.from(JSON.stringify(this.map.get(n))) }));
  }

  /** Drops every segment whose frames are all at or below `lsn`, never the newest one. */
  async dropThrough(lsn: number): Promise<number[]> {
    const all = this.list();
    const newest = all.length ? all[all.length - 1].segment : -1;
    const dropped: number[] = [];
    for (const s of all) {
      if (s.segment === newest || s.last > lsn) continue;
      await this.db.clear({ gte: logKey(s.first), lt: logKey(s.last + 1) });
      await this.db.del(metaKey('segment', s.segment));
      this.map.delete(s.segment);
      dropped.push(s.segment);
    }
    return dropped;
  }
}
