/**
 * The client's cost over the wire it rides on: @mmdb/client (Node's fetch/undici, retry and
 * error handling, JSON parsing) against raw `https.request` with a keep-alive agent, on the same
 * server in the same run. GET of a row one at a time (latency) and with `--concurrency` calls
 * in flight (throughput), and JSON `_batch` writes of `--batch` rows.
 *
 *   npm run build && node tools/bench/client/bench.js [--requests 3000] [--concurrency 32] [--batch 1000] [--batches 20]
 */
const path = require('path');
const { startServer, prepare, request, T, TENANT, TOKEN, PRELOAD, row } = require('../http/harness');
const { Mmdb } = require('../../../libs/client/dist');

const arg = (name, def) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const N = arg('requests', 3000);
const C = arg('concurrency', 32);
const BATCH = arg('batch', 1000);
const BATCHES = arg('batches', 20);

const pct = (xs, p) => xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

async function serial(fn) {
  const lat = [];
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const s = performance.now();
    await fn(i);
    lat.push(performance.now() - s);
  }
  return { rps: N / ((performance.now() - t0) / 1000), p50: pct(lat, 0.5), p99: pct(lat, 0.99) };
}

async function concurrent(fn) {
  let next = 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  await Promise.all(Array.from({ length: C }, async () => {
    while (next < N) await fn(next++);
  }));
  const cpu = process.cpuUsage(cpu0);
  return { rps: N / ((performance.now() - t0) / 1000), cpu_us: (cpu.user + cpu.system) / N };
}

(async () => {
  const srv = await startServer({ env: { DB_SYNC: '0' } });
  try {
    await prepare(srv);
    const db = new Mmdb({ url: srv.url, token: TOKEN, tenant: TENANT, caFile: path.join(srv.dir, 'tls/cert.pem') });
    const raw = async (i) => {
      const r = await request(srv, 'GET', `${T}/rows/bench.items/${i % PRELOAD}`);
      if (r.status !== 200) throw new Error(r.text);
      return JSON.parse(r.text);
    };
    const viaClient = (i) => db.rows.get('bench.items', i % PRELOAD);
    await serial(raw);
    await serial(viaClient); // warm both
    const rows = [];
    for (const [name, fn] of [['raw https', raw], ['@mmdb/client', viaClient]]) {
      const s = await serial(fn);
      const c = await concurrent(fn);
      rows.push({ name, serial_rps: s.rps, p50_ms: s.p50, p99_ms: s.p99, concurrent_rps: c.rps, cpu_us: c.cpu_us });
    }
    let id = 1_000_000;
    const batchRaw = async () => {
      const body = JSON.stringify(Array.from({ length: BATCH }, () => row(id++)));
      const r = await request(srv, 'POST', `${T}/rows/bench.items/_batch`, body, 'application/json');
      if (r.status !== 200) throw new Error(r.text);
    };
    const batchClient = () => db.rows.batch('bench.items', Array.from({ length: BATCH }, () => row(id++)));
    for (const [name, fn] of [['raw https', batchRaw], ['@mmdb/client', batchClient]]) {
      const t0 = performance.now();
      for (let i = 0; i < BATCHES; i++) await fn();
      rows.find((r) => r.name === name).batch_rows_s = (BATCH * BATCHES) / ((performance.now() - t0) / 1000);
    }
    await db.close();
    const f = (x) => (x >= 100 ? Math.round(x).toString() : x.toFixed(2));
    console.log(`\nGET row: ${N} requests serial and at ${C} in flight; _batch: ${BATCHES} × ${BATCH} rows (DB_SYNC=0)\n`);
    console.log('| client | serial req/s | p50 ms | p99 ms | concurrent req/s | client CPU µs/req | batch rows/s |');
    console.log('|---|---|---|---|---|---|---|');
    for (const r of rows) console.log(`| ${r.name} | ${f(r.serial_rps)} | ${f(r.p50_ms)} | ${f(r.p99_ms)} | ${f(r.concurrent_rps)} | ${f(r.cpu_us)} | ${f(r.batch_rows_s)} |`);
    const [a, b] = rows;
    const x = (k) => (b[k] / a[k]).toFixed(2);
    console.log(`| ratio client/raw | ${x('serial_rps')} | ${x('p50_ms')} | ${x('p99_ms')} | ${x('concurrent_rps')} | ${x('cpu_us')} | ${x('batch_rows_s')} |`);
  } finally {
    await srv.stop();
  }
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
