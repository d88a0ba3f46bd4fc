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

/** What a synced batch written while a deferred frame was not yet durable records (M ‖ "deferred"). */
export const DEFERRED_MARK = metaKey('deferred');

/**
 * At open: a power loss (not a process crash: the OS keeps what was written) may have lost a
 * deferred frame whose log sync had not finished while a later batch, synced by LevelDB,
 * survived. That later batch recorded the deferred frame's LSN; if the frame is missing
 * under the log's last LSN, its LSN is filled with an empty frame, so the log stays
 * gapless (only between two frames that are there: not one log retention dropped). Nothing else is repaired: such a frame is a backfill frame (only those are
 * deferred), no backfill frame is written while one is not durable, and its `migration` step
 * was lost with it, so the backfill resumes at the cursor before it and copies those rows
 * again; no caller was answered for it or for anything written after it. Returns the LSN
 * filled, if any.
 */
export async function fillLostDeferred(db: Db, lastLsn: number, epoch: number): Promise<number | null> {
  const mark = await db.get(DEFERRED_MARK);
  if (!mark) return null;
  const { lsn } = parseJson<{ lsn: number }>(mark);
  if (!(lsn > 0 && lsn < lastLsn) || (await db.get(logKey(lsn))) !== undefined) return null;
  // Missing between two frames that are there (not a frame log retention dropped with its segment).
  if ((lsn > 1 && (await db.get(logKey(lsn - 1))) === undefined) || (await db.get(logKey(lsn + 1))) === undefined) return null;
  const frame = { version: FRAME_VERSION, epoch, lsn, time: Date.now(), changes: [], writes: [], meta: { route: 'lost deferred frame' } };
  await db.batch().put(logKey(lsn), encodeFrame(frame, '[]')).del(DEFERRED_MARK).write({ sync: true });
  return lsn;
}
