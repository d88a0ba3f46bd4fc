#!/usr/bin/env node
/**
 * The disk alone (issue 21): the latency of a small append + fdatasync (a foreground write's
 * log sync) while another file receives a steady stream of writes (a backfill's log and
 * LevelDB's flushes and compactions), at several background rates. A foreground write's p99
 * during a copy cannot be lower than this disk's small-fsync p99 at the copy's write rate
 * (bench.js and inproc.js print that rate: the process's disk writes, MB/s).
 *
 *   node tools/bench/migrations/fsync.js [--s 8] [--rates 0,5,10,20,40] [--sync-kb 192] [--dir $TMPDIR]   # ~45 s
 *
 * Per rate: 300-byte appends each fdatasync'ed, one every 10 ms (~100/s, the bench's foreground
 * PUT rate) for --s seconds, beside 64 KB appends at <rate> MB/s to another file with an
 * fdatasync every --sync-kb KB (default 192: every third append, a deferred-sync backfill's pattern). Prints p50 / p90 / p99 / max.
 */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { pct } = require('./attribution');

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
};
const SECONDS = Number(arg('s', 8));
const RATES = String(arg('rates', '0,5,10,20,40')).split(',').map(Number);
// --sync-kb N: the background stream fdatasyncs every N KB (default 192: every third 64 KB append,
// a deferred-sync backfill's log); 2048 is a LevelDB table file of the default 2 MB synced as it
// is finished (a flush's or a compaction's output), 0 never (the kernel's writeback alone).
const SYNC_KB = Number(arg('sync-kb', 192));
const DIR = fs.mkdtempSync(path.join(arg('dir', os.tmpdir()), 'bench-fsync-'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const write = (fd, b) => new Promise((r, j) => fs.write(fd, b, (e) => (e ? j(e) : r())));
const datasync = (fd) => new Promise((r, j) => fs.fdatasync(fd, (e) => (e ? j(e) : r())));

async function one(rate) {
  const fg = fs.openSync(path.join(DIR, `fg-${rate}.log`), 'w');
  const bg = fs.openSync(path.join(DIR, `bg-${rate}.log`), 'w');
  let stop = false;
  let bgBytes = 0;
  const big = Buffer.alloc(64 * 1024, 2);
  const small = Buffer.alloc(300, 1);
  const background = (async () => {
    if (rate <= 0) return;
    const every = (64 / 1024 / rate) * 1000;
    for (let n = 1; !stop; n++) {
      const t = performance.now();
      await write(bg, big);
      bgBytes += big.length;
      if (SYNC_KB > 0 && (n * 64) % SYNC_KB < 64) await datasync(bg);
      const rest = every - (performance.now() - t);
      if (rest > 0) await sleep(rest);
    }
  })();
  const lat = [];
  const t0 = performance.now();
  while (performance.now() - t0 < SECONDS * 1000) {
    const t = performance.now();
    await write(fg, small);
    await datasync(fg);
    lat.push(performance.now() - t);
    await sleep(10);
  }
  stop = true;
  await background;
  fs.closeSync(fg);
  fs.closeSync(bg);
  const s = (performance.now() - t0) / 1000;
  return { rate, got: bgBytes / 1e6 / s, n: lat.length, p50: pct(lat, 50), p90: pct(lat, 90), p99: pct(lat, 99), max: Math.max(...lat) };
}

async function main() {
  console.log(`small append + fdatasync beside a stream of writes to another file, synced every ${SYNC_KB} KB (${DIR}, ${SECONDS} s each)`);
  console.log('background MB/s (asked / got)   n      p50     p90     p99     max  (ms)   p99 / p99 alone');
  let alone;
  for (const rate of RATES) {
    const r = await one(rate);
    alone ??= r.p99;
    const f = (x) => x.toFixed(2).padStart(7);
    console.log(`${`${rate} / ${r.got.toFixed(1)}`.padEnd(30)} ${String(r.n).padStart(4)} ${f(r.p50)} ${f(r.p90)} ${f(r.p99)} ${f(r.max)}        ${(r.p99 / alone).toFixed(2)}`);
  }
  fs.rmSync(DIR, { recursive: true, force: true });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
