/**
 * CPU used during a phase of the watch benchmark, from /proc (Linux): per process (the server,
 * the subscribers' process, this bench; user and system time, every thread), and the host's
 * (all of its CPUs busy, and steal: time a hypervisor gave the CPUs to other guests). On a
 * 2-core host the sum tells whether the write tail is the server's work or a wait for a CPU.
 */
'use strict';
const fs = require('fs');
const os = require('os');

const HZ = 100; // USER_HZ: /proc's clock ticks (100 on every Linux this runs on)

function procTicks(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return { user: Number(f[11]), sys: Number(f[12]) };
  } catch {
    return { user: NaN, sys: NaN };
  }
}

function hostTicks() {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = f;
  return { busy: user + nice + system + irq + softirq, idle: idle + iowait, steal: steal ?? 0 };
}

/**
 * Starts a measurement of the processes `pids` ({name: pid}); `.end()` answers, over the phase,
 * each one's CPU in cores (user + sys, and sys alone), the host's busy cores, its steal (% of all
 * its CPU time) and its load average at the end.
 */
function cpuPhase(pids) {
  const t0 = performance.now();
  const p0 = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, procTicks(pid)]));
  const h0 = hostTicks();
  return {
    end() {
      const secs = (performance.now() - t0) / 1000;
      const out = { procs: {}, host: {} };
      for (const [k, pid] of Object.entries(pids)) {
        const a = p0[k];
        const b = procTicks(pid);
        out.procs[k] = { cores: (b.user + b.sys - a.user - a.sys) / HZ / secs, sys: (b.sys - a.sys) / HZ / secs };
      }
      const h1 = hostTicks();
      const all = h1.busy + h1.idle + h1.steal - (h0.busy + h0.idle + h0.steal);
      out.host = { cores: (h1.busy - h0.busy) / HZ / secs, steal: (100 * (h1.steal - h0.steal)) / Math.max(1, all), load: os.loadavg()[0], cpus: os.cpus().length };
      return out;
    },
  };
}

module.exports = { cpuPhase };
