/**
 * The log as the change feed reads it: frames by LSN, where it starts, how many bytes it
 * holds after a point, and its epoch history (`M ‖ epochs`: each epoch and the first LSN
 * written under it, recorded in the batch of that frame), against which a cursor's epoch is
 * checked.
 */
import { DbError } from '@mmdb/core';
import type { FeedEntry, FeedSource } from './feed';
import { decodeFrame, frameLsn, verifyFrame } from './frame';
import { LOG_END, LOG_START, logKey, metaKey, parseJson } from './records';
import type { SegmentIndex } from './segments';
import type { Db } from './snapshot';

/** One frame found by `scan`: its entry, or the error that refused it. */
export type ScannedFrame =
  | { readonly lsn: number; readonly entry: FeedEntry; readonly error?: undefined }
  | { readonly lsn: number; readonly entry?: undefined; readonly error: DbError };

const lsnOfKey = (k: Buffer): number => Number(k.readBigUInt64BE(1));

/** Decodes and verifies a log entry, its LSN included (the frame must say the LSN of its key). */
function entryOf(k: Buffer, v: Buffer): FeedEntry {
  const frame = decodeFrame(v);
  const lsn = lsnOfKey(k);
  if (frame.lsn !== lsn) throw new DbError('corrupt_log', `frame under key ${lsn} says lsn ${frame.lsn}`);
  return { frame, bytes: v };
}

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

  /** Up to `limit` frames with lsn >= from, decoded and verified (a bad one throws `corrupt_log`). */
  async readLog(from: number, limit: number): Promise<FeedEntry[]> {
    const out: FeedEntry[] = [];
    for (const [k, v] of (await this.db.iterator({ gte: logKey(from), lt: LOG_END, limit }).all()) as Array<[Buffer, Buffer]>) out.push(entryOf(k, v));
    return out;
  }

  /**
   * Verifies (checksum and structure, `verifyFrame`; nothing decoded) the frames with lsn in
   * [from, to], newest first, until `maxBytes` of them are read (the frame that crosses it
   * included, so the newest is always checked): what recovery checks of the log's tail while the
   * participants load their checkpoints (the frames it then replays are decoded, and so checked,
   * too). Returns the LSNs it verified (newest first) and those that failed, ascending.
   */
  async verifyTail(from: number, to: number, maxBytes: number): Promise<{ verified: number[]; corrupt: number[] }> {
    const corrupt: number[] = [];
    const verified: number[] = [];
    let bytes = 0;
    if (to < from) return { verified, corrupt };
    const it = this.db.iterator({ gte: logKey(from), lte: logKey(to), reverse: true });
    try {
      while (bytes < maxBytes) {
        const batch = (await it.nextv(64)) as Array<[Buffer, Buffer]>;
        if (!batch.length) break;
        for (const [k, v] of batch) {
          bytes += v.length;
          const lsn = lsnOfKey(k);
          try {
            if (verifyFrame(v) !== lsn) throw new DbError('corrupt_log', `frame under key ${lsn} says lsn ${frameLsn(v)}`);
            verified.push(lsn);
          } catch (e) {
            if (!(e instanceof DbError)) throw e;
            corrupt.push(lsn);
          }
          if (bytes >= maxBytes) break;
        }
      }
    } finally {
      await it.close();
    }
    return { verified, corrupt: corrupt.reverse() };
  }

  /**
   * Every frame with lsn >= from, in order: decoded and verified, or (`error`) why it was
   * refused, so recovery can list every bad frame before it decides (the frames it does not
   * replay are checked by `verifyTail`, without decoding).
   */
  async *scan(from: number): AsyncIterable<ScannedFrame> {
    const it = this.db.iterator({ gte: logKey(from), lt: LOG_END });
    try {
      for (;;) {
        const batch = (await it.nextv(256)) as Array<[Buffer, Buffer]>;
        if (!batch.length) return;
        for (const [k, v] of batch) {
          try {
            yield { lsn: lsnOfKey(k), entry: entryOf(k, v) };
          } catch (e) {
            if (!(e instanceof DbError)) throw e;
            yield { lsn: lsnOfKey(k), error: e };
          }
        }
      }
    } finally {
      await it.close();
    }
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
