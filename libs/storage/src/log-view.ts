/**
 * The log as the change feed reads it: frames by LSN, where it starts, how many bytes it
 * holds after a point, and its epoch history (`M ‖ epochs`: each epoch and the first LSN
 * written under it, recorded in the batch of that frame), against which a cursor's epoch is
 * checked.
 */
import type { FeedEntry, FeedSource } from './feed';
import { decodeFrame } from './frame';
import { LOG_END, LOG_START, logKey, metaKey, parseJson } from './records';
import type { SegmentIndex } from './segments';
import type { Db } from './snapshot';

export class LogView implements FeedSource {
  /** [epoch, first LSN written under it], oldest first. */
  private epochs: Array<[number, number]> = [];

  constructor(
    private readonly db: Db,
    private readonly segments: SegmentIndex,
    private readonly last: () => number,
  ) {}

  get lastLsn(): number {
    return this.last();
  }

  /** Loads the epoch history; a store from before it takes its first frame's epoch from its first LSN. */
  async load(): Promise<void> {
    const stored = await this.db.get(metaKey('epochs'));
    if (stored) {
      this.epochs = parseJson<Array<[number, number]>>(stored);
      return;
    }
    const first = await this.db.values({ gte: LOG_START, lt: LOG_END, limit: 1 }).all();
    if (first.length) {
      const f = decodeFrame(first[0]);
      this.epochs = [[f.epoch, f.lsn]];
    }
  }

  /** Notes the frames about to be written: the history's write for their batch when an epoch changes, else null. */
  noteEpochs(frames: readonly { lsn: number; epoch: number }[]): { key: Buffer; value: Buffer } | null {
    let changed = false;
    for (const f of frames) {
      const last = this.epochs[this.epochs.length - 1];
      if (last && last[0] === f.epoch) continue;
      this.epochs.push([f.epoch, f.lsn]);
      changed = true;
    }
    return changed ? { key: metaKey('epochs'), value: Buffer.from(JSON.stringify(this.epochs)) } : null;
  }

  async readLog(from: number, limit: number): Promise<FeedEntry[]> {
    const out: FeedEntry[] = [];
    for (const [, v] of (await this.db.iterator({ gte: logKey(from), lt: LOG_END, limit }).all()) as Array<[Buffer, Buffer]>) out.push({ frame: decodeFrame(v), bytes: v });
    return out;
  }

  firstLsn(): number {
    const first = this.segments.list()[0];
    return first ? first.first : this.lastLsn + 1;
  }

  epochAt(lsn: number): number | undefined {
    if (lsn < 1 || lsn > this.lastLsn || !this.epochs.length) return undefined;
    let e = this.epochs[0][0];
    for (const [epoch, from] of this.epochs) if (from <= lsn) e = epoch;
    return e;
  }

  readonly bytesAfter = (lsn: number): number => {
    let n = 0;
    for (const s of this.segments.list()) if (s.last > lsn) n += s.bytes;
    return n;
  };
}
