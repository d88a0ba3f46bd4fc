// The timing client of the HTTPS target, run as a child process (child_process.fork) so that
// the benchmark's own heap (edge lists, the in-process adjacency, the SQLite peer) and its GC
// never sit in the timed path. One keep-alive TLS 1.3 connection, one request at a time.
// Messages: {init: {url, ca, token}} → {ready}; {run: {id, paths, warm}} → {id, ms, at, gcs}
// where ms[i] is the latency of paths[i], at[i] its wall-clock start (epoch ms), and gcs the
// client's own GC pauses during the timed loop.
'use strict';
const https = require('https');
const { performance, PerformanceObserver } = require('perf_hooks');

let call;
let gcs = null;
new PerformanceObserver((list) => {
  if (gcs) for (const e of list.getEntries()) gcs.push({ at: performance.timeOrigin + e.startTime, ms: e.duration });
}).observe({ entryTypes: ['gc'] });

function client(url, ca, token) {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca });
  const headers = { authorization: `Bearer ${token}` };
  return (p) =>
    new Promise((resolve, reject) => {
      const req = https.request(url + p, { method: 'GET', headers, agent }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`GET ${p}: ${res.statusCode} ${Buffer.concat(chunks).toString('utf8').slice(0, 300)}`));
          resolve(chunks.length);
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
}

async function run({ id, paths, warm }) {
  for (let i = 0; i < warm; i++) await call(paths[i % paths.length]);
  const ms = new Array(paths.length);
  const at = new Array(paths.length);
  gcs = [];
  for (let i = 0; i < paths.length; i++) {
    const s = performance.now();
    await call(paths[i]);
    const e = performance.now();
    ms[i] = e - s;
    at[i] = performance.timeOrigin + s;
  }
  const g = gcs;
  gcs = null;
  return { id, ms, at, gcs: g };
}

process.on('message', (m) => {
  if (m.init) {
    call = client(m.init.url, m.init.ca, m.init.token);
    process.send({ ready: true });
  } else if (m.run) {
    run(m.run).then(
      (r) => process.send(r),
      (e) => process.send({ id: m.run.id, error: String(e?.stack ?? e) }),
    );
  } else if (m.exit) {
    process.exit(0);
  }
});
