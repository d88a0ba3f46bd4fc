/**
 * The watch benchmark's tables (bench.js): per repeat (each phase with subscribers against the
 * phases without them just before and after it), then all repeats pooled, then (with --trace)
 * what the slow writes of each phase waited on (slow-writes.js).
 */
'use strict';
const { pooled } = require('./server-side');
const { attribute, rows, HEADER, longTurns } = require('./slow-writes');

const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const pct = (xs, p) => (xs.length ? xs[Math.min(xs.length - 1, Math.floor(xs.length * p))] : NaN);
const lats = (ps) => ps.flatMap((p) => p.lat).sort((a, b) => a - b);
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const mean = (xs) => sum(xs) / Math.max(1, xs.length);
const medianOf = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function gcOf(ps, kind) {
  return { count: sum(ps.map((p) => p.server.gc[kind].count)), ms: sum(ps.map((p) => p.server.gc[kind].ms)) };
}
const gcText = (ps) => {
  const a = gcOf(ps, 'major');
  const b = gcOf(ps, 'minor');
  return `major ${a.count} (${f(a.ms)} ms), minor ${b.count} (${f(b.ms)} ms)`;
};
const cores = (ps, k) => {
  const xs = ps.map((p) => p.use.procs[k]).filter(Boolean);
  return xs.length ? `${f(mean(xs.map((x) => x.cores)), 2)} (sys ${f(mean(xs.map((x) => x.sys)), 2)})` : '';
};
const host = (ps) => `${f(mean(ps.map((p) => p.use.host.cores)), 2)}, ${f(mean(ps.map((p) => p.use.host.steal)))} %, ${f(Math.max(...ps.map((p) => p.use.host.load)), 2)}`;

/** Repeat r (1-based): its phase with subscribers and its peer, the phases without just before and after it. */
function repeat(withouts, withs, r) {
  const S = withs[r - 1];
  const W = [withouts[r - 1], withouts[r]];
  const wl = lats(W);
  return { S, W, ratio: pct(S.lat, 0.99) / pct(wl, 0.99), wp99: [pct(W[0].lat, 0.99), pct(W[1].lat, 0.99)], serverW: pooled(...W.map((p) => p.server)) };
}

function report({ withouts, withs, trace }, o) {
  const out = [];
  const line = (s) => out.push(s);
  const R = withs.length;
  const reps = Array.from({ length: R }, (_, i) => repeat(withouts, withs, i + 1));
  const withoutLat = lats(withouts);
  const withLat = lats(withs);
  const ratio = pct(withLat, 0.99) / pct(withoutLat, 0.99);
  const secs = sum(withs.map((p) => p.seconds));
  const secsW = sum(withouts.map((p) => p.seconds));
  line(`\nwatch benchmark: ${o.SUBS} subscribers over ${o.TABLES} tables, ${o.RATE} rows/s target, window ${o.WINDOW} ms; ${R} repeats of ${o.DURATION} s with subscribers, each between two phases without (the first and last ${o.DURATION / 2} s): ${f(secsW, 0)} s without, ${f(secs, 0)} s with${o.SUBS_NICE ? `; subscribers' process at nice ${o.SUBS_NICE}` : ''}`);
  line('\nper repeat (each phase with subscribers against the phases without them just before and after it):');
  line('| repeat | write p99 ms without: before / after | write p99 ms with | ratio | server-side p99 ms without / with | server GC without (2 phases) / with | longest fan-out turn ms; catch-ups | commit → event p99 ms | deliveries (expected) |');
  line('|---|---|---|---|---|---|---|---|---|');
  reps.forEach(({ S, W, ratio: x, wp99, serverW }, i) =>
    line(`| ${i + 1} | ${f(wp99[0], 2)} / ${f(wp99[1], 2)} | ${f(pct(S.lat, 0.99), 2)} | ${f(x, 2)}× | ${f(serverW.p99, 2)} / ${f(S.server.p99, 2)} | ${gcText(W)} / ${gcText([S])} | ${f(S.server.longestTurn, 2)}; ${S.server.catchUps} | ${f(pct(S.delivery, 0.99))} | ${S.delivery.length} (${S.expected}) |`),
  );
  const ratios = reps.map((r) => r.ratio);
  const delivery = withs.flatMap((p) => p.delivery).sort((a, b) => a - b);
  const expected = sum(withs.map((p) => p.expected));
  const fan = (k) => sum(withs.map((p) => p.fan[k]));
  const srvW = pooled(...withouts.map((p) => p.server));
  const srvS = pooled(...withs.map((p) => p.server));
  line(`\nall repeats pooled (${withoutLat.length} writes without, ${withLat.length} with):`);
  line('| measure | without subscribers | with subscribers | ratio | target |');
  line('|---|---|---|---|---|');
  line(`| writes/s achieved | ${f(mean(withouts.map((p) => p.rate)), 0)} | ${f(mean(withs.map((p) => p.rate)), 0)} | | ${o.RATE} |`);
  line(`| write p50 ms | ${f(pct(withoutLat, 0.5), 2)} | ${f(pct(withLat, 0.5), 2)} | ${f(pct(withLat, 0.5) / pct(withoutLat, 0.5), 2)}× | |`);
  line(`| write p99 ms | ${f(pct(withoutLat, 0.99), 2)} | ${f(pct(withLat, 0.99), 2)} | ${f(ratio, 2)}× | ≤ 1.5× ${ratio <= 1.5 ? 'met' : 'MISSED'} |`);
  line(`| write p99 ratio per repeat (median) | | | ${ratios.map((x) => `${f(x, 2)}×`).join(', ')} (${f(medianOf(ratios), 2)}×) | |`);
  line(`| write p99.9 ms | ${f(pct(withoutLat, 0.999), 2)} | ${f(pct(withLat, 0.999), 2)} | ${f(pct(withLat, 0.999) / pct(withoutLat, 0.999), 2)}× | |`);
  line(`| server-side write p50 / p99 ms (histogram buckets) | ${f(srvW.p50, 2)} / ${f(srvW.p99, 2)} | ${f(srvS.p50, 2)} / ${f(srvS.p99, 2)} | ${f(srvS.p99 / srvW.p99, 2)}× | |`);
  const loop = (ps) => `${f(Math.max(...ps.map((p) => p.server.loopP99)))} / ${f(Math.max(...ps.map((p) => p.server.loopMax)))}`;
  line(`| server event-loop delay p99 / max ms (worst phase) | ${loop(withouts)} | ${loop(withs)} | | |`);
  line(`| server GC pauses: count (total) | ${gcText(withouts)} | ${gcText(withs)} | | |`);
  line(`| server: longest fan-out turn ms; stream reads behind their buffer | | ${f(Math.max(...withs.map((p) => p.server.longestTurn)), 2)}; ${sum(withs.map((p) => p.server.catchUps))} | | |`);
  line(`| CPU cores: server (of it kernel) | ${cores(withouts, 'server')} | ${cores(withs, 'server')} | | |`);
  line(`| CPU cores: bench writer / subscribers' process | ${cores(withouts, 'bench')} | ${cores(withs, 'bench')} / ${cores(withs, 'subscribers')} | | |`);
  line(`| host: busy cores of ${withs[0].use.host.cpus}, steal %, load average (max) | ${host(withouts)} | ${host(withs)} | | |`);
  // the host's busy cores beyond this run's three processes: other work on the machine (a quiet host: near 0)
  const others = (ps) => f(mean(ps.map((p) => p.use.host.cores - Object.values(p.use.procs).reduce((a, x) => a + (Number.isFinite(x.cores) ? x.cores : 0), 0))), 2);
  line(`| host: busy cores outside this run's processes (a quiet host: ~0) | ${others(withouts)} | ${others(withs)} | | |`);
  // the fan-out's turns (take frames, match, serialize, write the socket), timed by the server: its event loop's time per second
  line(`| server: fan-out main-thread ms/s (µs per turn, ≈ per stream and burst) | | ${f((fan('fs') * 1000) / secs)} (${f((fan('fs') * 1e6) / Math.max(1, fan('ft')))} µs × ${f(fan('ft') / secs, 0)}/s) | | |`);
  line(`| server: bursts delivered in a group's turn (of all) | | ${f((fan('fg') * 100) / Math.max(1, fan('ft')))} % | | |`);
  line(`| commit → event p50 ms | | ${f(pct(delivery, 0.5))} | | |`);
  line(`| commit → event p99 ms | | ${f(pct(delivery, 0.99))} | | ≤ ${o.WINDOW + 50} ${pct(delivery, 0.99) <= o.WINDOW + 50 ? 'met' : 'MISSED'} |`);
  line(`| deliveries (expected) | | ${delivery.length} (${expected}) | | all |`);
  line(`| match evaluations per examined row change | | ${f(fan('ev') / Math.max(1, fan('rc')))} | | ≤ 2 |`);
  // subscribers compiled alike share one match per burst: the distinct queries per table (2 here) examine each write once each
  line(`| row changes examined per write (shared queries once) | | ${f(fan('rc') / Math.max(1, withLat.length), 2)} | | |`);
  if (trace) {
    line('\nwhat the writes waited on (--trace: each write aligned with the server\'s GC pauses, fan-out turns, reads behind a buffer and event-loop stalls; slow = at or above the phase\'s p99; all = every write of the phase):');
    for (const h of HEADER) line(h);
    withouts.forEach((p, i) => {
      for (const r of rows(`W${i}`, attribute(p.writes, trace))) line(r);
      if (i < R) for (const r of rows(`S${i + 1}`, attribute(withs[i].writes, trace))) line(r);
    });
    // what the long turns were: fan-out work, or a GC pause / a wait for a CPU inside one
    const lt = withs.map((p, i) => ({ i, ...longTurns(trace, p.t0, p.t1) }));
    line(`\nfan-out turns over 1 ms per phase with subscribers (of them overlapping a GC; else a loop stall with under half its length in CPU, i.e. waiting for a CPU; longest ms): ${lt.map((x) => `S${x.i + 1} ${x.n} (${x.gc}; ${x.waited}; ${f(x.longest, 2)})`).join(', ')}`);
  }
  return out.join('\n');
}

module.exports = { report };
