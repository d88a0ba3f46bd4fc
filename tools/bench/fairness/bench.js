#!/usr/bin/env node
/**
 * Fairness: point reads and /health while CPU-heavy queries run (issue 25 §3).
 *
 * Starts the BUILT server (`npm run build` first), loads a table of ROWS rows and a dense edge
 * table, then in the same run measures, for DURATION seconds each:
 *   1. alone: point reads (`SELECT … WHERE id = $1`, one client, back to back) and GET /health
 *      (every 20 ms);
 *   2. the same with 4 heavy queries in flight (each re-issued as soon as it answers): a cross join,
 *      a deep recursive CTE, a depth-64 BFS over the dense edge table (recursive CTE, UNION), and a
 *      1,000-way top-k (ORDER BY … LIMIT 1000).
 * Prints p50/p99/max of each, the heavy queries completed, and the target (point-read p99 ≤ 10 ms).
 *
 *   node tools/bench/fairness/bench.js                      # full size (see README)
 *   ROWS=2000 DURATION=3 node tools/bench/fairness/bench.js # smoke
 */
'use strict';
const fs = require('fs');
const https = require('https');
const os = require('os');
const path = require('path');
const { startBuiltServer, httpsRequest } = require('../server');

const ROWS = Number(process.env.ROWS ?? 20_000);
const DURATION = Number(process.env.DURATION ?? 15);
const NODES = Number(process.env.NODES ?? 300);
const DEGREE = Number(process.env.DEGREE ?? 16);
const TENANT = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const TOKEN = 'fairness-token-0123456789abcdef';
const T = `/v1/tenants/${TENANT}`;

const CROSS = Math.max(200, Math.round(Math.sqrt(ROWS) * 20)); // rows per side of the cross join
const HEAVY = [
  ['cross join', `SELECT count(*) FROM big a, big b WHERE a.id <= ${CROSS} AND b.id <= ${CROSS} AND a.v + b.v < 0`],
  ['recursive CTE', `WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < ${ROWS * 50}) SELECT count(*) FROM c`],
  ['BFS depth 64', `WITH RECURSIVE r(node, d) AS (SELECT 1, 0 UNION SELECT e.dst, r.d + 1 FROM r, edges e WHERE e.src = r.node AND r.d < 64) SELECT count(*) FROM r`],
  ['top-1000', `SELECT id, v FROM big ORDER BY v DESC, id LIMIT 1000`],
];

const pct = (xs, p) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const f = (x) => (Number.isFinite(x) ? x.toFixed(2) : '-');

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairness-'));
  const { proc, url } = await startBuiltServer(dir, { tenant: TENANT, token: TOKEN, env: { DB_QUERY_TIMEOUT_MS: '600000', ...(process.env.SERVER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.SERVER_NODE_OPTIONS } : {}) } });
  const agent = new https.Agent({ keepAlive: true, rejectUnauthorized: false, maxSockets: 16 });
  const sql = async (q, params) => {
    const r = await httpsRequest(agent, url, TOKEN, 'POST', `${T}/sql`, { sql: q, params });
    if (r.status !== 200) throw new Error(`${r.status} ${r.text.slice(0, 300)} for ${q}`);
    return r.json;
  };
  try {
    await sql('CREATE TABLE big(id INTEGER PRIMARY KEY, v INTEGER, name TEXT)');
    await sql('CREATE TABLE edges(src INTEGER, dst INTEGER)');
    await sql(`INSERT INTO big SELECT n, (n * 7919) % 100003, 'name' || n FROM (WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ${ROWS}) SELECT n FROM s)`);
    await sql(`INSERT INTO edges SELECT n % ${NODES} + 1, (n * 7919 + n / ${NODES}) % ${NODES} + 1 FROM (WITH RECURSIVE s(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s WHERE n < ${NODES * DEGREE - 1}) SELECT n FROM s)`);
    const point = () => sql('SELECT id, v, name FROM big WHERE id = $1', [1 + Math.floor(Math.random() * ROWS)]);
    for (let i = 0; i < 200; i++) await point(); // warm: plan cache, table cache
    for (const [, q] of HEAVY) await sql(q); // warm, and each must answer (no budget refusal)

    const phase = async (heavy) => {
      let stop = false;
      const done = HEAVY.map(() => 0);
      const runners = heavy ? HEAVY.map(async ([, q], i) => { while (!stop) { await sql(q); done[i]++; } }) : [];
      await new Promise((r) => setTimeout(r, heavy ? 300 : 0)); // let the heavy queries get going
      const reads = [];
      const health = [];
      const t0 = Date.now();
      const healthLoop = (async () => {
        while (Date.now() - t0 < DURATION * 1000) {
          const s = performance.now();
          const r = await httpsRequest(agent, url, TOKEN, 'GET', '/health');
          if (r.status !== 200) throw new Error(`/health answered ${r.status}`);
          health.push(performance.now() - s);
          await new Promise((res) => setTimeout(res, 20));
        }
      })();
      while (Date.now() - t0 < DURATION * 1000) {
        const s = performance.now();
        await point();
        reads.push(performance.now() - s);
      }
      await healthLoop;
      stop = true;
      await Promise.all(runners);
      return { reads, health, done };
    };
    const alone = await phase(false);
    const loaded = await phase(true);
    const rows = [
      ['point read', alone.reads, loaded.reads],
      ['/health', alone.health, loaded.health],
    ];
    console.log(`fairness: ROWS=${ROWS} NODES=${NODES} DEGREE=${DEGREE} cross ${CROSS}x${CROSS} DURATION=${DURATION}s per phase`);
    console.log('| request | alone n | alone p50 ms | alone p99 ms | 4 heavy n | 4 heavy p50 ms | 4 heavy p99 ms | 4 heavy max ms | p99 ratio |');
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const [name, a, b] of rows) {
      console.log(`| ${name} | ${a.length} | ${f(pct(a, 50))} | ${f(pct(a, 99))} | ${b.length} | ${f(pct(b, 50))} | ${f(pct(b, 99))} | ${f(Math.max(...b))} | ${f(pct(b, 99) / pct(a, 99))} |`);
    }
    console.log(`heavy queries completed during the loaded phase: ${HEAVY.map(([n], i) => `${n} ${loaded.done[i]}`).join(', ')}`);
    const p99 = pct(loaded.reads, 99);
    console.log(`target: point-read p99 with 4 heavy queries <= 10 ms: ${p99 <= 10 ? 'MET' : 'NOT MET'} (${f(p99)} ms)`);
  } finally {
    agent.destroy();
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
