#!/usr/bin/env node
/**
 * Which classic-level calls block the event loop, and for how long, while LevelDB works in the
 * background (issue 25 §1; README.md "The blocked stalls, call by call"). One database in
 * $TMPDIR, a writer on its own async loop (batches of 500 puts of 400 B over 400,000 keys: memtable
 * flushes and compactions all along), and on the event loop, in turn, each call that runs
 * synchronously on it: `db.snapshot()` and its close, a `get` with an explicit snapshot (no
 * LevelDB mutex on this thread: the read's constructor only queues it), a `get` without one (its
 * constructor creates an implicit snapshot under the mutex), an iterator's creation (NewIterator
 * takes the mutex) and close, and an `fs.stat` (a threadpool queue, no LevelDB at all: the floor).
 * Each call's wall time is split with /proc/self/task/<pid>/schedstat into on CPU, run-queue wait
 * and blocked (neither: waiting on a lock).
 *
 *   node tools/bench/stalls/level-calls.js [--seconds 25]
 */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { ClassicLevel } = require('classic-level');
const { numArg } = require('../server');

const SECONDS = numArg('seconds', 25);
const schedFile = `/proc/self/task/${process.pid}/schedstat`;
const sched = () => {
  const f = fs.readFileSync(schedFile, 'utf8').split(' ');
  return { cpu: Number(f[0]) / 1e6, wait: Number(f[1]) / 1e6 };
};
const now = () => Number(process.hrtime.bigint()) / 1e6;

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-level-calls-'));
  const db = new ClassicLevel(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  const val = Buffer.alloc(400, 7);
  let stop = false;
  let written = 0;
  const writer = (async () => {
    for (let i = 0; !stop; ) {
      const b = db.batch();
      for (let j = 0; j < 500; j++) b.put(Buffer.from(`k${(i++ * 7919) % 400000}`), val);
      await b.write();
      written += 500;
    }
  })();
  const stats = new Map();
  const time = (name, fn) => {
    const s0 = sched();
    const t0 = now();
    const r = fn();
    const ms = now() - t0;
    const s1 = sched();
    const blocked = ms - (s1.cpu - s0.cpu) - (s1.wait - s0.wait);
    const st = stats.get(name) ?? { n: 0, ms: 0, over1: 0, blocked1: 0, max: 0, maxBlocked: 0 };
    stats.set(name, st);
    st.n++;
    st.ms += ms;
    if (ms > 1) st.over1++;
    if (blocked > 1) st.blocked1++;
    st.max = Math.max(st.max, ms);
    st.maxBlocked = Math.max(st.maxBlocked, blocked);
    return r;
  };
  const end = now() + SECONDS * 1000;
  while (now() < end) {
    const k = Buffer.from(`k${Math.floor(Math.random() * 400000)}`);
    const s = time('snapshot_init (db.snapshot())', () => db.snapshot());
    await time('get, explicit snapshot', () => db.get(k, { snapshot: s }));
    await time('get, implicit snapshot', () => db.get(k));
    time('snapshot_close', () => s.close());
    await time('fs.stat (threadpool queue only)', () => fs.promises.stat(dir));
    const it = time('iterator_init (NewIterator)', () => db.iterator({ gte: k, limit: 2 }));
    await it.nextv(2);
    await time('iterator_close', () => it.close());
  }
  stop = true;
  await writer;
  await db.close();
  fs.rmSync(dir, { recursive: true, force: true });
  const f = (x, d = 1) => x.toFixed(d);
  console.log(`\n### classic-level calls on the event loop while ${written.toLocaleString()} puts were written (${SECONDS} s; load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')})\n`);
  console.log('| call (its part on the event loop) | calls | mean µs | over 1 ms | blocked over 1 ms | longest ms | longest blocked ms |');
  console.log('|---|---|---|---|---|---|---|');
  for (const [name, s] of stats) console.log(`| ${name} | ${s.n} | ${f((1000 * s.ms) / s.n)} | ${s.over1} | ${s.blocked1} | ${f(s.max, 2)} | ${f(s.maxBlocked, 2)} |`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
