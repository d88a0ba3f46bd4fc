/**
 * Deferred sync (DESIGN.md "Deferred sync"): a redoable background frame (a migration's
 * backfill frame) is written without its own fsync and made durable by a sync of the
 * database's log files right after it, so a foreground write queued behind it does not wait
 * for that frame's fsync before its own batch is issued. These are the two pieces outside the
 * coordinator: the log sync, and the repair recovery makes when such a frame was lost.
 */
import { open, readdir } from 'fs/promises';
import { join } from 'path';
import { encodeFrame, FRAME_VERSION } from './frame';
import { logKey, metaKey, parseJson } from './records';
import type { Db } from './snapshot';

/** LevelDB's write-ahead log files (`000123.log`) in its directory. */
const LOG_FILE = /^\d+\.log$/;

/**
 * Makes every batch written so far durable: fdatasync of each LevelDB log file in `dir`. Not
 * only the current one: LevelDB switches to a new log file when its memtable fills and does
 * not sync the old one, whose records stay only there until the memtable's flush (a synced
 * table file) deletes it. A file deleted meanwhile was flushed: its records are durable.
 */
export async function syncLevelLogs(dir: string): Promise<void> {
  const names = (await readdir(dir)).filter((n) => LOG_FILE.test(n));
  await Promise.all(
    names.map(async (n) => {
      let fh;
      try {
        fh = await open(join(dir, n), 'r');
        await fh.datasync();
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      } finally {
        await fh?.close();
      }
    }),
  );
}

/** The log file LevelDB appends to now: the highest-numbered one (null: none). */
export async function currentLevelLog(dir: string): Promise<string | null> {
  const names = (await readdir(dir)).filter((n) => LOG_FILE.test(n)).sort();
  return names.length ? names[names.length - 1] : null;
}

/** The recovery clue of a run of deferred groups (M ‖ "deferred"), written in every batch of the run. */
export const DEFERRED_MARK = metaKey('deferred');

interface Mark {
  /** The run's first LSN. */
  readonly from: number;
  /** Backfill cursor keys the run may move, with their value before it (hex; null: none). */
  readonly restore: ReadonlyArray<readonly [string, string | null]>;
}

/** The clue of a run starting at LSN `from`, moving the cursor keys `restore` (their values before it). */
export function deferredMark(from: number, restore: ReadonlyArray<readonly [Buffer, Buffer | null]>): Buffer {
  const mark: Mark = { from, restore: restore.map(([k, v]) => [k.toString('hex'), v ? v.toString('hex') : null] as const) };
  return Buffer.from(JSON.stringify(mark), 'utf8');
}

/**
 * At open: a power loss (not a process crash: the OS keeps what was written) may have lost a
 * deferred group of the last run (its sync unfinished) while a later batch of the run
 * survived: LevelDB replays its log records past a lost one. Each such missing LSN of the run
 * (between its first LSN and the log's last) is filled with an empty frame, so the log stays
 * gapless, and each backfill cursor the run moved (a `backfill` step written at or after the
 * run's first LSN) is set back to its value before the run, so the backfill copies the run's
 * rows again: a copy is idempotent (the row as it is then, with its source version), and the
 * rows a lost frame copied are copied again instead of skipped. Only redoable background
 * groups (backfill frames) are deferred; no caller was answered for anything at or after the
 * first group not durable, and nothing of it was applied or published. Without a hole (every
 * LSN of the run there, or only the tail lost) nothing is changed. `kept`: whether log
 * retention still holds the segment of an LSN. Returns the LSNs filled.
 */
export async function fillLostDeferred(db: Db, lastLsn: number, epoch: number, kept: (lsn: number) => boolean): Promise<number[]> {
  const raw = await db.get(DEFERRED_MARK);
  if (!raw) return [];
  const mark = parseJson<Mark>(raw);
  // A clue left by a run that ended durable (a crash before the next batch deleted it) whose
  // segment log retention dropped since: nothing to look at.
  if (!(mark.from > 0 && mark.from < lastLsn) || !kept(mark.from)) return [];
  const present = new Set<number>();
  for (const k of await db.keys({ gte: logKey(mark.from), lte: logKey(lastLsn) }).all()) present.add(Number(k.readBigUInt64BE(1)));
  const lost: number[] = [];
  for (let lsn = mark.from; lsn < lastLsn; lsn++) if (!present.has(lsn)) lost.push(lsn);
  if (!lost.length) return [];
  const batch = db.batch();
  for (const lsn of lost) {
    const frame = { version: FRAME_VERSION, epoch, lsn, time: Date.now(), changes: [], writes: [], meta: { route: 'lost deferred frame' } };
    batch.put(logKey(lsn), encodeFrame(frame, '[]'));
  }
  for (const [hex, before] of mark.restore) {
    const key = Buffer.from(hex, 'hex');
    const now = await db.get(key);
    const step = now ? parseJson<{ step?: string; lsn?: number }>(now) : null;
    // Only a backfill cursor the run moved: a later move (an abort, a cutover) stays.
    if (!step || step.step !== 'backfill' || (step.lsn ?? 0) < mark.from) continue;
    if (before === null) batch.del(key);
    else batch.put(key, Buffer.from(before, 'hex'));
  }
  batch.del(DEFERRED_MARK);
  await batch.write({ sync: true });
  return lost;
}
