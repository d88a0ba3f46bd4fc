/**
 * Phase 4 of the watch benchmark: the matching work on a large table. The table is loaded through
 * NDJSON `_batch` (frames of 10,000 rows, 100,000 rows per request: about as fast as the store
 * commits), one subscriber follows a filtered query over it, a few hundred single-row updates
 * land, and the server's `db_watch_match_evaluations_total` per changed row is set beside what a
 * re-run of the query per burst would cost (one POST /sql of it: the rows it reads, its time).
 */
'use strict';
const https = require('https');

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');

/** Loads `n` rows {id, v: id % 100, pad} into `bench.<table>` from id `from` on, over NDJSON _batch. */
async function ingest(call, T, table, from, n) {
  for (let i = 0; i < n; i += 100_000) {
    const lines = [];
    for (let j = i; j < Math.min(n, i + 100_000); j++) lines.push(JSON.stringify({ id: from + j, v: (from + j) % 100, pad: 'x' }));
    await call('POST', `${T}/rows/bench.${table}/_batch?chunk=10000`, lines.join('\n'), 'application/x-ndjson');
  }
}

/** Runs phase 4; returns the lines of its table. `ctx`: {call, metric, url, ca, token, T, rows, window, classes, toml}. */
async function matchingOnBigTable(ctx) {
  const { call, metric, url, ca, token, T, rows, window, classes } = ctx;
  await call('POST', `${T}/schemas`, ctx.toml('big'), 'text/plain');
  process.stderr.write(`phase 4: loading ${rows} rows into bench.big (NDJSON _batch)…\n`);
  const l0 = now();
  await ingest(call, T, 'big', 1, rows);
  const loadS = (now() - l0) / 1000;
  process.stderr.write(`phase 4: loaded in ${loadS.toFixed(1)} s; matching work on it\n`);
  const sql = `SELECT id, v FROM bench.big WHERE v % ${classes} = 0`;
  const stream = await new Promise((resolve, reject) => {
    const req = https.request(`${url}${T}/watch?sql=${encodeURIComponent(sql)}`, { headers: { accept: 'text/event-stream', authorization: `Bearer ${token}` }, ca, agent: false }, (res) => {
      res.once('data', () => resolve(req));
    });
    req.on('error', reject);
    req.end();
  });
  const ev0 = await metric('db_watch_match_evaluations_total');
  const rc0 = await metric('db_watch_row_changes_total');
  const updates = Math.min(300, rows);
  for (let i = 0; i < updates; i++) {
    const id = 1 + ((i * 7919) % rows);
    await call('PUT', `${T}/rows/bench.big/${id}`, { id, v: i % 100, pad: 'z' });
  }
  await sleep(window + 500);
  const ev1 = await metric('db_watch_match_evaluations_total');
  const rc1 = await metric('db_watch_row_changes_total');
  const q0 = now();
  const rerun = await call('POST', `${T}/sql`, { sql });
  const rerunMs = now() - q0;
  stream.destroy();
  return [
    `\nmatching on bench.big (${rows} rows, loaded in ${f(loadS)} s = ${f(rows / loadS, 0)} rows/s), ${updates} updates, one subscriber:`,
    '| measure | ours (incremental) | peer: re-run the query per burst |',
    '|---|---|---|',
    `| work per burst | ${f((ev1 - ev0) / Math.max(1, rc1 - rc0))} row evaluations per changed row (${ev1 - ev0} for ${rc1 - rc0} changes) | ${rows} rows read, ${rerun.rows.length} result rows to diff |`,
    `| time | (inside the event latency above) | ${f(rerunMs)} ms per re-run (POST /sql) |`,
  ].join('\n');
}

module.exports = { ingest, matchingOnBigTable };
