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
  }
  const failed = results.filter((r) => r.error);
  for (const r of failed) console.log(`FAILED: ${r.area} ${r.system} ${r.size}: ${r.error}`);
}

module.exports = { printReport };
