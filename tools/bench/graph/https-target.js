// HTTPS target: starts the BUILT server (dist/apps/api/main.js, `npx tsc -b tsconfig.build.json`)
// on 127.0.0.1 with a temp data dir, loads the edges through the row batch route, and
// times GET /graph/... over one keep-alive TLS 1.3 connection, one request at a time.
'use strict';
const fs = require('fs');
const https = require('https');
const os = require('os');
const path = require('path');
const { MANIFESTS } = require('./store-target');

const { ROOT, startBuiltServer } = require('../server');
const TENANT = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const TOKEN = 'graph-bench-token-0123456789';

function startServer(dataDir) {
  return startBuiltServer(dataDir, {
    tenant: TENANT,
    token: TOKEN,
    env: { DB_OPERATOR_TOKEN: 'graph-bench-operator-0123456789', DB_SYNC: 'false' }, // bulk load speed; reads are what is measured
  });
}

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

function httpsTarget() {
  return {
    async prepare(name, edges) {
      if (!fs.existsSync(path.join(ROOT, 'dist/apps/api/main.js'))) {
        console.log('(https target skipped: build the server first with `npx tsc -b tsconfig.build.json`)');
        return null;
      }
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'graph-bench-https-'));
      const { proc, url } = await startServer(dataDir);
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
      await call('GET', `${T}/graph/bench.edges/neighbors?rel=link&node=${encodeURIComponent(edges[0][0])}`); // builds the adjacency
      await new Promise((r) => setTimeout(r, 2000)); // let background compaction settle
      const G = `${T}/graph/bench.edges`;
      const e = encodeURIComponent;
      return {
        label: 'HTTPS (TLS 1.3, keep-alive)',
        neighbors: (n) => call('GET', `${G}/neighbors?rel=link&node=${e(n)}`),
        bfs: (n, d) => call('GET', `${G}/bfs?rel=link&src=${e(n)}&depth=${d}`),
        dijkstra: (s, t) => call('GET', `${G}/dijkstra?rel=link&src=${e(s)}&dst=${e(t)}`),
        async close() {
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
