// HTTPS target: starts the BUILT server (dist/apps/api/main.js, `npm run build`) on 127.0.0.1
// with a temp data dir, loads the edges through the row batch route, waits for the server to
// go quiet (load, compaction and the adjacency build all finished), then times GET /graph/...
// from a separate client process (https-client.js: one keep-alive TLS 1.3 connection, one
// request at a time) after a warm-up of a few thousand requests.
// With `probe: true` the server runs with server-probe.js preloaded and each timed loop also
// reports the server-side request time, the server's GC pauses and where the slow requests went.
'use strict';
const fs = require('fs');
const https = require('https');
const os = require('os');
const path = require('path');
const { fork } = require('child_process');
const { MANIFESTS } = require('./store-target');
const { quiesce, summarize } = require('./stats');

const { ROOT, startBuiltServer } = require('../server');
const TENANT = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const TOKEN = 'graph-bench-token-0123456789';

function startServer(dataDir, probeOut, profile) {
  const env = { DB_OPERATOR_TOKEN: 'graph-bench-operator-0123456789', DB_SYNC: 'false' }; // bulk load speed; reads are what is measured
  if (probeOut) Object.assign(env, { NODE_OPTIONS: `--require ${path.join(__dirname, 'server-probe.js')}`, GRAPH_PROBE_OUT: probeOut });
  if (profile) env.GRAPH_PROBE_PROFILE = '1';
  return startBuiltServer(dataDir, { tenant: TENANT, token: TOKEN, env });
}

/** The loading client (in this process): untimed. */
function client(url, ca) {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca });
  return (method, p, body, contentType = 'application/json') =>
    new Promise((resolve, reject) => {
      const headers = { authorization: `Bearer ${TOKEN}` };
      if (body !== undefined) headers['content-type'] = contentType;
      const req = https.request(url + p, { method, headers, agent }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200) return reject(new Error(`${method} ${p}: ${res.statusCode} ${text.slice(0, 300)}`));
          resolve(JSON.parse(text));
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      if (body !== undefined) req.end(body);
      else req.end();
    });
}

/** The timing client, in its own process. */
async function timingClient(url, ca) {
  const child = fork(path.join(__dirname, 'https-client.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiting = new Map();
  let seq = 0;
  child.on('message', (m) => {
    const w = waiting.get(m.id ?? 'ready');
    if (!w) return;
    waiting.delete(m.id ?? 'ready');
    if (m.error) w.reject(new Error(m.error));
    else w.resolve(m);
  });
  const ask = (id, msg) => new Promise((resolve, reject) => (waiting.set(id, { resolve, reject }), child.send(msg)));
  await ask('ready', { init: { url, ca, token: TOKEN } });
  return {
    run: (paths, warm) => {
      const id = ++seq;
      return ask(id, { run: { id, paths, warm } });
    },
    close: () => new Promise((r) => (child.once('exit', r), child.send({ exit: true }))),
  };
}

/** Reads the probe's dump number `n`, waiting for the server to write it after SIGWINCH. */
async function probeDump(proc, prefix, n) {
  proc.kill('SIGWINCH');
  const file = `${prefix}.${n}.json`;
  for (let i = 0; i < 200 && !fs.existsSync(file); i++) await new Promise((r) => setTimeout(r, 25));
  await new Promise((r) => setTimeout(r, 50));
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

/** One line on where a timed loop's time went, from the client's timings and the server's probe dump. */
function diagnose(label, c, d) {
  const server = summarize(d.reqs.map((r) => r.ms));
  const cut = summarize(c.ms).p99;
  const slow = [];
  for (let i = 0; i < c.ms.length; i++) if (c.ms[i] >= cut) slow.push(i);
  const overlaps = (list, a, b) => list.some((g) => g.at < b && g.at + g.ms > a);
  let serverGc = 0;
  let clientGc = 0;
  let serverSlow = 0;
  let slowWall = 0;
  let slowCpu = 0;
  for (const i of slow) {
    const a = c.at[i];
    const b = a + c.ms[i];
    if (overlaps(d.gcs, a, b)) serverGc++;
    if (overlaps(c.gcs, a, b)) clientGc++;
    const r = d.reqs.find((x) => x.at >= a && x.at < b);
    if (r && r.ms >= cut / 2) {
      serverSlow++;
      slowWall += r.ms;
      slowCpu += r.cpu;
    }
  }
  const kinds = {};
  for (const g of d.gcs) {
    const k = (kinds[g.kind] ??= { n: 0, ms: 0, max: 0 });
    k.n++;
    k.ms += g.ms;
    k.max = Math.max(k.max, g.ms);
  }
  const gcText = Object.entries(kinds)
    .map(([k, v]) => `${k} ${v.n}× total ${v.ms.toFixed(1)} max ${v.max.toFixed(2)} ms`)
    .join(', ');
  console.log(
    `  [probe] ${label}: server-side p50/p99 ${server.p50.toFixed(3)}/${server.p99.toFixed(3)} ms, server CPU ${(d.cpuMs / c.ms.length).toFixed(3)} ms/req; ` +
      `heap ${d.heapUsedMB} MB used (old ${d.spacesMB.old_space} MB, new ${d.spacesMB.new_space} MB); server GC: ${gcText || 'none'}; ` +
      `event-loop delay p99 ${d.eventLoopDelay.p99.toFixed(2)} ms; of ${slow.length} requests ≥ client p99 (${cut.toFixed(2)} ms): ` +
      `${serverGc} overlap a server GC, ${clientGc} a client GC, ${serverSlow} were slow inside the server` +
      (serverSlow ? ` (there: wall ${(slowWall / serverSlow).toFixed(2)} ms, process CPU ${(slowCpu / serverSlow).toFixed(2)} ms on average)` : ''),
  );
}

function httpsTarget({ probe = false, profile = false } = {}) {
  probe ||= profile;
  return {
    async prepare(name, edges) {
      if (!fs.existsSync(path.join(ROOT, 'dist/apps/api/main.js'))) {
        console.log('(https target skipped: build the server first with `npm run build`)');
        return null;
      }
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'graph-bench-https-'));
      // with --profile the probe's files (dumps, .cpuprofile per window) are kept after the run
      const probeDir = profile ? fs.mkdtempSync(path.join(os.tmpdir(), `graph-probe-${name}-`)) : dataDir;
      const probeOut = probe ? path.join(probeDir, 'probe') : undefined;
      if (profile) console.log(`${name}: server CPU profiles under ${probeDir} (node tools/bench/graph/profile-summary.js <file>)`);
      const { proc, url } = await startServer(dataDir, probeOut, profile);
      const ca = fs.readFileSync(path.join(dataDir, 'tls/cert.pem'), 'utf8');
      const call = client(url, ca);
      const T = `/v1/tenants/${TENANT}`;
      for (const m of MANIFESTS) await call('POST', `${T}/schemas`, m, 'text/plain');
      const t0 = Date.now();
      const B = 5000;
      for (let i = 0; i < edges.length; i += B) {
        const rows = edges.slice(i, i + B).map(([src, dst, w]) => ({ src, dst, w }));
        await call('POST', `${T}/rows/bench.edges/_batch`, JSON.stringify(rows));
      }
      console.log(`${name}: https load ${Date.now() - t0} ms (${edges.length} rows through POST _batch)`);
      const G = `${T}/graph/bench.edges`;
      const e = encodeURIComponent;
      await call('GET', `${G}/neighbors?rel=link&node=${e(edges[0][0])}`); // builds the adjacency
      const waited = await quiesce(proc.pid);
      console.log(`${name}: server quiet after ${waited} ms (compaction and build finished)`);
      const timer = await timingClient(url, ca);
      let dumps = 0;
      const paths = {
        neighbors: (q) => `${G}/neighbors?rel=link&node=${e(q.src)}`,
        bfs: (q) => `${G}/bfs?rel=link&src=${e(q.src)}&depth=3`,
        dijkstra: (q) => `${G}/dijkstra?rel=link&src=${e(q.src)}&dst=${e(q.dst)}`,
      };
      return {
        label: 'HTTPS (TLS 1.3, keep-alive)',
        /** Times `op` over the queries in the client process after `warm` warm-up requests. */
        async run(op, queries, warm) {
          await quiesce(proc.pid, { maxMs: 10_000 });
          if (probe) await probeDump(proc, probeOut, dumps++); // start afresh
          const ps = queries.map(paths[op]);
          const c = await timer.run(ps, warm);
          if (probe) {
            // the dump covers warm-up and loop; keep the loop's part
            const d = await probeDump(proc, probeOut, dumps++);
            const start = c.at[0];
            d.cpuMs /= d.reqs.length / queries.length; // the CPU of the timed requests' share
            d.reqs = d.reqs.filter((r) => r.at >= start - 0.01);
            d.gcs = d.gcs.filter((g) => g.at + g.ms >= start);
            diagnose(`${name} ${op}`, c, d);
            if (profile) console.log(`  [probe] ${name} ${op}: profile ${probeOut}.${dumps - 1}.cpuprofile (the window's warm-up and loop)`);
          }
          return summarize(c.ms);
        },
        async close() {
          await timer.close();
          const exited = new Promise((r) => proc.once('exit', r));
          proc.kill('SIGTERM');
          await exited;
          fs.rmSync(dataDir, { recursive: true, force: true });
        },
      };
    },
  };
}

module.exports = { httpsTarget };
