/**
 * Shared by the benchmarks: CPU time of a process, and waiting until a process has gone
 * quiet before a timed loop (so no loop overlaps a load's tail: LevelDB compaction threads,
 * a lazy index build, the garbage collection of the load's garbage).
 */
const fs = require('fs');

/** CPU seconds (user + system, all threads) used so far by process `pid` (Linux /proc). */
function cpuSeconds(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return NaN;
  }
}

/**
 * Waits until process `pid` (default: this one) uses under `idle` of one core over a
 * `windowMs` window. Gives up after `maxMs`; returns the wait in ms.
 */
async function quiesce(pid = process.pid, { idle = 0.05, windowMs = 500, maxMs = 120_000 } = {}) {
  const t0 = Date.now();
  for (;;) {
    const a = cpuSeconds(pid);
    await new Promise((r) => setTimeout(r, windowMs));
    const b = cpuSeconds(pid);
    if (!(b - a >= idle * (windowMs / 1000)) || Date.now() - t0 > maxMs) return Date.now() - t0;
  }
}

module.exports = { cpuSeconds, quiesce };
