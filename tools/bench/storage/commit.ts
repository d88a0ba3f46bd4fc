/**
 * Storage commit benchmark (issue: durable tenant store).
 *
 *   npm run bench:storage            (about 1.5 minutes; BENCH_SECONDS=N per measurement, default 4;
 *                                     BENCH_ROUNDS=N rounds of the compared pairs, default 3)
 *
 * Measures, on a real classic-level store on disk with sync: true:
 * - durable single-row commits/s through TenantStore.put at 1, 16 and 64 concurrent callers;
 * - rows/s committing batches of 1,000 rows (one commit, one frame each);
 * each row with one secondary index, beside the ceiling of this machine: a raw
 * classic-level loop of `batch(..., { sync: true })` writing the same row and index keys
 * in batches of the same sizes, measured in the same run;
 * - the change feed: 64 callers committing while a `changesFrom` reader consumes every frame
 *   (frames/s the reader consumes beside the commits/s of the same run, and the commits/s
 *   beside the 64-caller run without a reader: what the feed costs the writers), and while a
 *   follower applies them to a second store through `applyFrames` (the frame applier).
 * The two comparisons with targets (batches of 1,000 beside the raw loop; 64 callers with a feed
 * reader beside without) are measured in BENCH_ROUNDS rounds, each pair back to back (which goes
 * first alternates by round), and
 * reported as the median of the rounds' ratios (with each round's ratio): one 4 s run of each
 * swung by several percent with the host's neighbours.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'fs';
import { join } from 'path';
import { ClassicLevel } from 'classic-level';
import { TenantStore, keyOf } from '@mmdb/storage';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const base = join(__dirname, '../../../tmp');

const SCHEMA = `namespace = "bench"
table = "kv"
primary_key = ["k"]
[[columns]]
name = "k"
ty = "i64"
[[columns]]
name = "v"
ty = "str"
[[columns]]
name = "n"
ty = "i64"
[[indexes]]
name = "by_v"
columns = ["v"]
`;

function tmp(name: string): string {
  mkdirSync(base, { recursive: true });
  return mkdtempSync(join(base, `bench-${name}-`));
}

async function timed(fn: (stop: () => boolean) => Promise<number>): Promise<{ n: number; s: number }> {
  const t0 = performance.now();
  const end = t0 + SECONDS * 1000;
  const n = await fn(() => performance.now() >= end);
  return { n, s: (performance.now() - t0) / 1000 };
}

async function storeSingles(callers: number): Promise<number> {
  return (await singlesWithFeed(callers, 'none')).commits;
}

/**
 * `callers` writers for SECONDS; with `reader`, a feed reader from the start of the run that
 * counts every frame (`count`) or applies each batch to a second store (`follow`).
 */
async function singlesWithFeed(callers: number, reader: 'none' | 'count' | 'follow'): Promise<{ commits: number; frames: number }> {
  const dir = tmp(`s${callers}${reader}`);
  const store = await TenantStore.open({ dir });
  await store.registerSchema(SCHEMA);
  const follower = reader === 'follow' ? await TenantStore.open({ dir: join(dir, 'follower') }) : null;
  if (follower) for await (const e of store.logFrames(1)) await follower.applyFrames([e.bytes]);
  const feed = reader === 'none' ? null : store.changesFrom({ epoch: store.epoch, lsn: store.lastLsn }, { kind: follower ? 'follower' : 'watch' });
  let frames = 0;
  let readerEnd = 0;
  const consumed = (async () => {
    if (!feed) return;
    for await (const b of feed) {
      if (follower) await follower.applyFrames(b.entries.map((e) => e.bytes));
      frames += b.entries.length;
      readerEnd = performance.now();
    }
  })();
  const t0 = performance.now();
  let next = 0;
  const r = await timed(async (stop) => {
    let n = 0;
    await Promise.all(
      Array.from({ length: callers }, async () => {
        while (!stop()) {
          const k = next++;
          await store.put('bench.kv', { k, v: `v${k % 100}`, n: k });
          n++;
        }
      }),
    );
    return n;
  });
  // the reader catches up on what was committed, then stops
  const last = store.lastLsn;
  while (feed && frames < last - 1) await new Promise((res) => setTimeout(res, 5));
  feed?.close();
  await consumed;
  await follower?.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return { commits: r.n / r.s, frames: feed ? frames / ((readerEnd - t0) / 1000) : 0 };
}

async function storeBatches(size: number): Promise<number> {
  const dir = tmp(`b${size}`);
  const store = await TenantStore.open({ dir });
  await store.registerSchema(SCHEMA);
  let next = 0;
  const r = await timed(async (stop) => {
    let n = 0;
    while (!stop()) {
      const changes = Array.from({ length: size }, () => {
        const k = next++;
        return { op: 'put' as const, schema: 'bench.kv', row: { k, v: `v${k % 100}`, n: k } };
      });
      await store.commit({ changes });
      n += size;
    }
    return n;
  });
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return r.n / r.s;
}

/** The ceiling: raw sync batches of the same row + index keys, no log, no checks. */
async function rawLoop(size: number): Promise<number> {
  const dir = tmp(`raw${size}`);
  const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  let next = 0;
  const r = await timed(async (stop) => {
    let n = 0;
    while (!stop()) {
      // A chained batch: the fastest way classic-level takes a batch (the array form costs more per key).
      const batch = db.batch();
      for (let i = 0; i < size; i++) {
        const k = next++;
        batch.put(keyOf('R', ['bench.kv', k]), Buffer.from(JSON.stringify([1, k, { k, v: `v${k % 100}`, n: k }])));
        batch.put(keyOf('I', ['bench.kv', 'by_v', `v${k % 100}`, k]), Buffer.alloc(0));
      }
      await batch.write({ sync: true });
      n += size;
    }
    return n;
  });
  await db.close();
  rmSync(dir, { recursive: true, force: true });
  return r.n / r.s;
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

const median = (xs: readonly number[]): number => {
  const a = [...xs].sort((x, y) => x - y);
  return a.length % 2 ? a[a.length >> 1] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
};
const pct = (xs: readonly number[]): string => xs.map((x) => `${(x * 100).toFixed(0)}%`).join(', ');

async function main(): Promise<void> {
  console.log(`storage commit benchmark: ${SECONDS}s per measurement, ${ROUNDS} rounds of the compared pairs, sync: true, one secondary index, data under ${base}`);
  const raw1 = await rawLoop(1);
  const s1 = await storeSingles(1);
  const s16 = await storeSingles(16);
  // The pairs with targets, back to back in each round; the ratio is taken within a round.
  const raws: number[] = [];
  const batches: number[] = [];
  const alone: number[] = [];
  const read: Array<{ commits: number; frames: number }> = [];
  for (let r = 0; r < ROUNDS; r++) {
    // Which of a pair goes first alternates by round, so a drift of the host's load weighs on both alike.
    if (r % 2 === 0) {
      raws.push(await rawLoop(1000));
      batches.push(await storeBatches(1000));
      alone.push(await storeSingles(64));
      read.push(await singlesWithFeed(64, 'count'));
    } else {
      batches.push(await storeBatches(1000));
      raws.push(await rawLoop(1000));
      read.push(await singlesWithFeed(64, 'count'));
      alone.push(await storeSingles(64));
    }
  }
  const withFollower = await singlesWithFeed(64, 'follow');
  const batchRatios = batches.map((b, i) => b / raws[i]);
  const readerRatios = read.map((x, i) => x.commits / alone[i]);
  const keepUp = read.map((x) => x.frames / x.commits);
  const s64 = median(alone);
  const raw1000 = median(raws);
  const b1000 = median(batches);
  const withReader = { commits: median(read.map((x) => x.commits)), frames: median(read.map((x) => x.frames)) };
  const rows = [
    ['single-row commits, 1 caller', s1, raw1, s1 / raw1],
    ['single-row commits, 16 callers', s16, raw1, s16 / raw1],
    ['single-row commits, 64 callers (median)', s64, raw1, s64 / raw1],
    ['rows in batches of 1,000 (median; ratio: median of the rounds)', b1000, raw1000, median(batchRatios)],
  ] as const;
  console.log('');
  console.log('| workload | ours rows/s | raw classic-level sync loop rows/s (same batch size) | ours / raw |');
  console.log('|---|---:|---:|---:|');
  for (const [name, ours, raw, ratio] of rows) console.log(`| ${name} | ${fmt(ours)} | ${fmt(raw)} | ${ratio.toFixed(2)} |`);
  console.log('');
  console.log(`64 callers / 1 caller: ${(s64 / s1).toFixed(1)}x (target >= 10x); 64 callers: ${fmt(s64)} commits/s (target >= 20,000)`);
  console.log(`batches of 1,000: ${(median(batchRatios) * 100).toFixed(0)}% of the raw loop (target >= 50%); by round: ${pct(batchRatios)}`);
  console.log('');
  console.log('| change feed, 64 callers (medians) | ours | peer (same rounds) | peer | ours / peer (median of the rounds) |');
  console.log('|---|---:|---|---:|---:|');
  console.log(`| commits/s with a feed reader | ${fmt(withReader.commits)} | commits/s, no reader | ${fmt(s64)} | ${median(readerRatios).toFixed(2)} |`);
  console.log(`| frames/s the reader consumes | ${fmt(withReader.frames)} | commits/s beside it | ${fmt(withReader.commits)} | ${median(keepUp).toFixed(2)} |`);
  console.log(`| frames/s a follower applies (applyFrames) | ${fmt(withFollower.frames)} | commits/s beside it | ${fmt(withFollower.commits)} | ${(withFollower.frames / withFollower.commits).toFixed(2)} |`);
  console.log('');
  console.log(`a feed reader costs the writers ${((1 - median(readerRatios)) * 100).toFixed(0)}% (target <= 5%); with / without by round: ${pct(readerRatios)}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
