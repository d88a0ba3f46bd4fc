// Where a slow foreground write's time goes while a backfill runs (issue 21): the evidence the
// migration benches print beside their figures. Each source is read from outside the code under
// test, so the figures need no instrumented build:
// - LevelDB's own LOG in the store's directory: every memtable flush ("Level-0 table #N:
//   started" … "bytes OK") and compaction ("Compacting …" … "Compacted …"), as time windows,
//   and LevelDB's write stalls ("… waiting…": a full memtable or too many level-0 files);
// - the process's disk writes (`write_bytes` of /proc/<pid>/io: the log, the table files and
//   every compaction of a store in that process);
// - GC pauses: a PerformanceObserver in-process (inproc.js), or the server's `--trace-gc` lines
//   (bench.js --diag 1);
// - event-loop stalls (in-process): a 2 ms timer's lateness.
'use strict';
const fs = require('fs');
const path = require('path');

const pct = (xs, p) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

/** Bytes the process `pid` has caused to be written to disk so far (null where /proc is missing). */
function diskWrites(pid = 'self') {
  try {
    return Number(/write_bytes: (\d+)/.exec(fs.readFileSync(`/proc/${pid}/io`, 'utf8'))[1]);
  } catch {
    return null;
  }
}

/** LevelDB databases under `root` (directories holding a CURRENT and a LOG file), largest first. */
function leveldbDirs(root) {
  const out = [];
  const walk = (d, depth) => {
    let names;
    try {
      names = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    if (names.some((n) => n.name === 'CURRENT') && names.some((n) => n.name === 'LOG')) {
      const bytes = names.filter((n) => n.isFile()).reduce((s, n) => s + fs.statSync(path.join(d, n.name)).size, 0);
      out.push({ dir: d, bytes });
    }
    if (depth < 4) for (const n of names) if (n.isDirectory()) walk(path.join(d, n.name), depth + 1);
  };
  walk(root, 0);
  return out.sort((a, b) => b.bytes - a.bytes);
}

/**
 * LevelDB's activity in `dir` from its LOG files, in epoch milliseconds: `busy` [from, to, what]
 * windows (flushes and compactions), `stalls` [at, message] (its write stalls: "Current memtable
 * full; waiting…", "Too many L0 files; waiting…"; its 1 ms slowdown at 8 level-0 files is not
 * logged) and `compactions` ({from, to, level, files, below, bytes}: `files` of `level` merged
 * with `below` of the next, `bytes` written).
 */
function leveldbActivity(dir) {
  const lines = [];
  for (const f of ['LOG.old', 'LOG']) {
    let txt;
    try {
      txt = fs.readFileSync(path.join(dir, f), 'utf8');
    } catch {
      continue;
    }
    for (const line of txt.split('\n')) {
      // "2026/11/25-17:31:33.123456 7f0a1b2c3d4e message" (local time; the host runs UTC, as the bench's clocks)
      const m = /^(\d{4})\/(\d\d)\/(\d\d)-(\d\d):(\d\d):(\d\d)\.(\d{6}) \S+ (.*)$/.exec(line);
      if (m) lines.push([Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]) + +m[7] / 1000, m[8]]);
    }
  }
  const busy = [];
  const stalls = [];
  const compactions = [];
  const flushes = new Map();
  let compacting = null;
  let inputs = null;
  for (const [t, msg] of lines) {
    let m;
    if ((m = /Level-0 table #(\d+): started/.exec(msg))) flushes.set(m[1], t);
    else if ((m = /Level-0 table #(\d+): (\d+) bytes/.exec(msg)) && flushes.has(m[1])) busy.push([flushes.get(m[1]), t, 'flush']);
    else if ((m = /^Compacting (\d+)@(\d+) \+ (\d+)@(\d+) files/.exec(msg))) {
      compacting = t;
      inputs = { level: +m[2], files: +m[1], below: +m[3] };
    } else if ((m = /^Compacted .* => (\d+) bytes/.exec(msg)) && compacting !== null) {
      busy.push([compacting, t, 'compaction']);
      compactions.push({ from: compacting, to: t, bytes: +m[1], ...inputs });
      compacting = null;
    } else if (/waiting/.test(msg)) stalls.push([t, msg]);
  }
  return { busy, stalls, compactions };
}

/** GC pauses from `node --trace-gc` output: [[ms since the isolate started, pause ms, kind]]. */
function traceGcPauses(text) {
  const out = [];
  const re = /\]\s+(\d+) ms: (Scavenge|Mark-Compact|Mark-sweep|Minor Mark-Sweep)[^,]*, ([\d.]+) \/ ([\d.]+) ms/g;
  let m;
  while ((m = re.exec(text))) out.push([Number(m[1]), Number(m[3]), m[2]]);
  return out;
}

/** How much of [a, b] the windows `ws` ([from, to, …]) cover, ms. */
function overlap(a, b, ws) {
  let s = 0;
  for (const [c, d] of ws) s += Math.max(0, Math.min(b, d) - Math.max(a, c));
  return s;
}

/** Merges windows ([from, to, …]) into disjoint ones. */
function union(ws) {
  const s = [...ws].sort((x, y) => x[0] - y[0]);
  const out = [];
  for (const [a, b] of s) {
    if (out.length && a <= out[out.length - 1][1]) out[out.length - 1][1] = Math.max(out[out.length - 1][1], b);
    else out.push([a, b]);
  }
  return out;
}

/**
 * Compares the writes (each [start, end] in one clock, `busy` windows in the same clock) above
 * the p`p` latency with all writes: the share of each that overlapped a window, and the share
 * of the interval the windows covered. A cause of the tail shows as slow writes overlapping it
 * far more often than the time it covers.
 */
function tailOverlap(writes, busy, p = 99) {
  if (!writes.length) return null;
  const t0 = Math.min(...writes.map(([s]) => s));
  const t1 = Math.max(...writes.map(([, e]) => e));
  const u = union(busy.filter(([a, b]) => b >= t0 && a <= t1));
  const cut = pct(
    writes.map(([s, e]) => e - s),
    p,
  );
  const slow = writes.filter(([s, e]) => e - s >= cut);
  const hit = (xs) => xs.filter(([s, e]) => overlap(s, e, u) > 0).length / xs.length;
  return { covered: overlap(t0, t1, u) / Math.max(1, t1 - t0), slow: slow.length, slowHit: hit(slow), allHit: hit(writes), cut };
}

/** In-process: GC pauses (PerformanceObserver) and event-loop stalls (a 2 ms timer's lateness), in performance.now() ms. */
function watchProcess() {
  const { PerformanceObserver } = require('perf_hooks');
  const gcs = [];
  const obs = new PerformanceObserver((l) => {
    for (const e of l.getEntries()) gcs.push([e.startTime, e.startTime + e.duration, e.detail?.kind ?? e.kind]);
  });
  obs.observe({ entryTypes: ['gc'] });
  const lags = [];
  let last = performance.now();
  const t = setInterval(() => {
    const now = performance.now();
    if (now - last > 4) lags.push([last + 2, now]);
    last = now;
  }, 2);
  return {
    gcs,
    lags,
    stop: () => {
      obs.disconnect();
      clearInterval(t);
    },
  };
}

/**
 * Times the synchronous part of each call into LevelDB's native binding that takes LevelDB's
 * database lock on the calling thread (classic-level's get and getMany create the read's implicit
 * snapshot there: `DB::GetSnapshot`), i.e. how long each blocked the event loop, beside a control
 * (an fstat and 16 random bytes every 3 ms: a syscall that takes no LevelDB lock) under the same
 * CPU contention. `db` is a ClassicLevel instance (the store's `db`).
 */
function probeLevelCalls(db, fd) {
  const rec = { get: [], getMany: [], control: [] };
  const restore = [];
  for (const [name, bucket] of [
    ['_get', 'get'],
    ['_getMany', 'getMany'],
  ]) {
    const orig = db[name];
    db[name] = function (...a) {
      const t = performance.now();
      try {
        return orig.apply(this, a);
      } finally {
        rec[bucket].push(performance.now() - t);
      }
    };
    restore.push(() => (db[name] = orig));
  }
  const crypto = require('crypto');
  const timer = setInterval(() => {
    const t = performance.now();
    fs.fstatSync(fd);
    crypto.randomBytes(16);
    rec.control.push(performance.now() - t);
  }, 3);
  return {
    rec,
    stop: () => {
      clearInterval(timer);
      for (const r of restore) r();
    },
    print: () => {
      for (const [k, d] of Object.entries(rec)) {
        if (!d.length) continue;
        const long = d.filter((x) => x > 5).length;
        console.log(
          `  ${k.padEnd(8)} n ${String(d.length).padStart(6)}  p50 ${pct(d, 50).toFixed(3)}  p99 ${pct(d, 99).toFixed(3)}  max ${Math.max(...d).toFixed(1)} ms  sum ${d.reduce((a, b) => a + b, 0).toFixed(0)} ms  over 5 ms: ${long} (${((100 * long) / d.length).toFixed(2)}%)`,
        );
      }
    },
  };
}

/**
 * Samples the number of level-0 files of `db` (a ClassicLevel, in-process) every `everyMs`:
 * LevelDB's `MakeRoomForWrite` sleeps 1 ms in every write once there are 8 (its slowdown
 * trigger) and stops writes at 12. Each sample is [performance.now() ms, level-0 files].
 * (`leveldb.approximate-memory-usage` cannot say whether a flush is pending: LevelDB 1.20 adds the
 * block cache's charge to the memtables'.) `getProperty` takes LevelDB's lock on the calling thread.
 */
function sampleLevel0(db, everyMs = 2) {
  const samples = [];
  const t = setInterval(() => {
    try {
      samples.push([performance.now(), Number(db.getProperty('leveldb.num-files-at-level0'))]);
    } catch {
      /* closed */
    }
  }, everyMs);
  return { samples, stop: () => clearInterval(t) };
}

/**
 * LevelDB's compactions in [a, b] (epoch ms; `compactions` of `leveldbActivity`), summarized: how
 * many, the MB they wrote, the most level-0 files one took (a level-0 compaction takes every
 * level-0 file overlapping its range: the count there was then), and how many level-0 compactions
 * took fewer than 4 level-0 files: LevelDB's size trigger for level 0 is 4 files, so those were
 * started by reads (its seek trigger: a file consulted before the one holding the key, charged
 * for it, is compacted after file_size / 16 KB such reads).
 */
function compactionSummary(compactions, a, b) {
  const cs = compactions.filter((c) => c.to >= a && c.from <= b);
  const l0 = cs.filter((c) => c.level === 0);
  return {
    n: cs.length,
    mb: cs.reduce((s, c) => s + c.bytes, 0) / 1e6,
    maxL0: Math.max(0, ...l0.map((c) => c.files)),
    l0: l0.length,
    l0BySeek: l0.filter((c) => c.files < 4).length,
    text() {
      return `${this.n} compactions writing ${this.mb.toFixed(0)} MB; ${this.l0} of level 0 (${this.l0BySeek} started by reads, with < 4 level-0 files), the most level-0 files one took ${this.maxL0} (LevelDB slows writes at 8, stops them at 12)`;
    },
  };
}

module.exports = { sampleLevel0, compactionSummary, probeLevelCalls, pct, diskWrites, leveldbDirs, leveldbActivity, traceGcPauses, overlap, union, tailOverlap, watchProcess };
