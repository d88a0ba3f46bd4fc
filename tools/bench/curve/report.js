// Prints the curve's tables from the children's results (run.js).
'use strict';
const PEERS = { sql: 'sqlite', fts: 'fts5', graph: 'sqlite' };
const TARGET = 2; // no query's growth may exceed its peer's by more than 2× between two sizes

const f = (x) => (x === undefined || Number.isNaN(x) ? '–' : x >= 100 ? x.toFixed(0) : x >= 1 ? x.toFixed(2) : x.toFixed(4));
/** The peer's figure a row of ours is compared with: FTS5 has one ranking, so every ranking of ours is set beside its one pass. */
const peerKey = (area, name) => (area === 'fts' ? `top-10, ${name.split(', ').pop()}` : name.replace(' (executor walk)', ''));
const cell = (q) => (!q ? '–' : q.error ? `refused (${q.error.trim().split(' ')[0]})` : f(q.wall));

/** Per query: ms at each size (ours / peer), and between consecutive sizes the growth of each and their ratio. */
function printReport(results) {
  for (const area of ['sql', 'fts', 'graph']) {
    const rs = results.filter((r) => r.area === area && !r.error);
    if (!rs.length) continue;
    const peer = PEERS[area];
    const sizes = [...new Set(rs.map((r) => r.size))].sort((a, b) => a - b);
    const get = (system, size) => rs.find((r) => r.system === system && r.size === size);
    const names = [...new Set(rs.filter((r) => r.system === 'ours').flatMap((r) => Object.keys(r.queries)))];
    const what = area === 'sql' ? 'ms per query (steady state)' : 'ms per query (mean of a pass) and the pass\'s p99';
    const misses = [];
    for (const m of ['wall', 'cpu']) {
      if (m === 'cpu' && !rs.some((r) => Object.values(r.queries).some((q) => q.cpu !== undefined))) continue;
      console.log(`\n## ${area}, ${m === 'wall' ? 'wall' : 'process CPU'}: ${what}; ours vs ${peer}, same run, each in its own process`);
      const head = ['query', ...sizes.map((s) => `${s} ours / ${peer}`), ...sizes.slice(1).map((s, i) => `growth ${sizes[i]}→${s} ours / ${peer} (ratio)`)];
      console.log(`| ${head.join(' | ')} |`);
      console.log(`|${head.map(() => '---').join('|')}|`);
      const val = (q) => (!q || q.error ? NaN : q[m] ?? NaN);
      const show = (q) => (q && q.error ? cell(q) : f(val(q)));
      for (const name of names) {
        const cells = [name];
        const q = (sys, s) => get(sys, s)?.queries[sys === 'ours' ? name : peerKey(area, name)];
        for (const s of sizes) cells.push(`${show(q('ours', s))} / ${show(q(peer, s))}`);
        for (let i = 1; i < sizes.length; i++) {
          const go = val(q('ours', sizes[i])) / val(q('ours', sizes[i - 1]));
          const gp = val(q(peer, sizes[i])) / val(q(peer, sizes[i - 1]));
          const ratio = go / gp;
          const miss = !(ratio <= TARGET);
          if (miss) misses.push(`${m} ${name} ${sizes[i - 1]}→${sizes[i]}`);
          cells.push(`${f(go)}× / ${f(gp)}× (${Number.isNaN(ratio) ? '–' : ratio.toFixed(2)}${miss ? ' MISS' : ''})`);
        }
        console.log(`| ${cells.join(' | ')} |`);
      }
    }
    console.log(`target: growth ratio ≤ ${TARGET}; ${misses.length ? `missed: ${misses.join('; ')}` : 'met everywhere'}`);
    console.log(`\n${area} memory (MB): RSS before the load (the constant), after it, after the queries, peak (VmHWM); after full collections ("settled"): RSS, live JS heap, typed-array and native buffers; load time`);
    console.log('| system | size | rss before | rss loaded | rss after | peak | js heap after | settled: rss / heap / buffers | load s | load average |');
    console.log('|---|---|---|---|---|---|---|---|---|---|');
    for (const s of sizes) {
      for (const sys of ['ours', peer]) {
        const r = get(sys, s);
        const st = r?.settled ? `${r.settled.rssMB} / ${r.settled.heapMB} / ${r.settled.externalMB}` : '–';
        if (r) console.log(`| ${sys} | ${s} | ${r.base?.rssMB ?? '–'} | ${r.loaded.rssMB} | ${r.after.rssMB} | ${r.after.peakMB} | ${r.after.heapMB} | ${st} | ${r.loadS.toFixed(0)} | ${r.loadavg} |`);
      }
    }
    for (const r of rs) if (r.budget) console.log(`ours ${r.size}: ${r.budget}`);
    printBudget(area, sizes.map((s) => get('ours', s)).filter(Boolean), sizes.map((s) => get(peer, s)));
  }
  const failed = results.filter((r) => r.error);
  for (const r of failed) console.log(`FAILED: ${r.area} ${r.system} ${r.size}: ${r.error}`);
}

/**
 * The memory rule (issue 25 §7): RSS stays within the documented budgets plus a constant,
 * whatever the size. Per size, what ours holds after full collections beyond its start
 * (settled RSS − RSS before the load) and beyond the documented figure (`budgetMB`: the index
 * for fts and graph, the table cache's estimated bytes + LevelDB's 32 MB for sql); the part
 * beyond the budget must not grow between sizes by more than max(64 MB, 10% of the budget).
 */
function printBudget(area, ours, peers) {
  const budgetOf = (r) => (r.budgetMB !== undefined ? r.budgetMB : r.cache?.bytes !== undefined ? r.cache.bytes / 1048576 + 32 : undefined);
  const rows = ours.filter((r) => r.settled && r.base && budgetOf(r) !== undefined);
  if (!rows.length) return;
  console.log(`\n${area} memory against the documented budget (MB, after full collections): held = settled RSS − RSS before the load`);
  console.log('| size | ours held | documented budget | beyond the budget | peer held | growth of ours held / of the peer\'s |');
  console.log('|---|---|---|---|---|---|');
  const misses = [];
  rows.forEach((r, i) => {
    const held = r.settled.rssMB - r.base.rssMB;
    const budget = budgetOf(r);
    const p = peers.find((x) => x && x.size === r.size);
    const pHeld = p?.settled && p.base ? p.settled.rssMB - p.base.rssMB : NaN;
    let growth = '–';
    if (i > 0) {
      const q = rows[i - 1];
      const qHeld = q.settled.rssMB - q.base.rssMB;
      const pq = peers.find((x) => x && x.size === q.size);
      const pqHeld = pq?.settled && pq.base ? pq.settled.rssMB - pq.base.rssMB : NaN;
      growth = `${f(held / qHeld)}× / ${f(pHeld / pqHeld)}×`;
      const over = held - budget - (qHeld - budgetOf(q));
      if (over > Math.max(64, 0.1 * budget)) misses.push(`${q.size}→${r.size}: beyond-budget part grew ${over.toFixed(0)} MB`);
    }
    console.log(`| ${r.size} | ${held.toFixed(0)} | ${budget.toFixed(0)} | ${(held - budget).toFixed(0)} | ${Number.isNaN(pHeld) ? '–' : pHeld.toFixed(0)} | ${growth} |`);
  });
  console.log(`budget rule (the part beyond the budget grows by at most max(64 MB, 10% of the budget) between sizes): ${misses.length ? `MISSED ${misses.join('; ')}` : 'met'}`);
}

module.exports = { printReport };
