/**
 * Runs the built server with the commit coordinator's `trace` hook on (used by commit-trace.js).
 * IPC 'start' clears the records; 'stop' answers a JSON summary of the requests committed
 * since: group sizes, each phase's mean (queued → taken → prepared → issued → written →
 * resolved, ms), the median and upper quartile of the time from one group's write ending to the
 * next one's being issued, the share of the time a batch write was in progress, and the event
 * loop's utilisation.
 */
const path = require('path');
const { performance } = require('perf_hooks');
const { Coordinator } = require(path.join(__dirname, '../../../libs/storage/dist/coordinator.js'));

let rec = [];
let on = false;
let elu0 = null;
const submit = Coordinator.prototype.submit;
Coordinator.prototype.submit = function (req) {
  if (!this.traced) {
    this.traced = true;
    this.trace = (t) => on && !t.background && rec.push(t);
  }
  return submit.call(this, req);
};

const q = (xs, p) => xs[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

function summary() {
  const written = rec.filter((t) => t.issued !== undefined && t.written !== undefined);
  const groups = new Map(); // issued time → { written, n }
  for (const t of written) {
    const g = groups.get(t.issued) ?? { written: t.written, n: 0 };
    g.n++;
    groups.set(t.issued, g);
  }
  const issued = [...groups.keys()].sort((a, b) => a - b);
  const sizes = issued.map((k) => groups.get(k).n).sort((a, b) => a - b);
  const gaps = [];
  let busy = 0;
  for (let i = 0; i < issued.length; i++) {
    busy += groups.get(issued[i]).written - issued[i];
    if (i) gaps.push(issued[i] - groups.get(issued[i - 1]).written);
  }
  gaps.sort((a, b) => a - b);
  const span = issued.length > 1 ? groups.get(issued[issued.length - 1]).written - issued[0] : 0;
  return {
    requests: rec.length,
    groups: issued.length,
    group_mean: written.length / Math.max(1, issued.length),
    group_p50: q(sizes, 0.5),
    group_max: sizes[sizes.length - 1],
    queued_ms: mean(written.map((t) => t.taken - t.at)),
    prepare_ms: mean(written.map((t) => t.prepared - t.taken)),
    wait_flight_ms: mean(written.map((t) => t.issued - t.prepared)),
    write_ms: mean(written.map((t) => t.written - t.issued)),
    answer_ms: mean(written.map((t) => t.resolved - t.written)),
    gap_p50_ms: q(gaps, 0.5),
    gap_p75_ms: q(gaps, 0.75),
    writing_share: span > 0 ? busy / span : 0,
    elu: performance.eventLoopUtilization(elu0).utilization,
  };
}

process.on('message', (m) => {
  if (m === 'start') {
    rec = [];
    on = true;
    elu0 = performance.eventLoopUtilization();
    process.send('started');
  }
  if (m === 'stop') {
    on = false;
    process.send(JSON.stringify(summary()));
  }
});
require(path.join(__dirname, '../../../dist/apps/api/main.js'));
