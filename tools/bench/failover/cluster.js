// A local replication cluster for the failover harness: one etcd (LocalEtcd from the built
// libs/replication) and N built servers sharing the bootstrap tenant and operator token, each
// with its own data dir and name; plus an HTTPS client that trusts each node's own certificate.
'use strict';
const fs = require('fs');
const https = require('https');
const os = require('os');
const path = require('path');
const { startBuiltServer } = require('../server');

const TENANT = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const TOKEN = 'failover-bench-token-0123456789';
const OPERATOR = 'failover-bench-operator-0123456789';

class Node {
  constructor(name, dir, env) {
    this.name = name;
    this.dir = dir;
    this.env = env;
    this.proc = null;
    this.url = null;
    this.agent = null;
  }

  async start() {
    const { proc, url } = await startBuiltServer(this.dir, { tenant: TENANT, token: TOKEN, env: { DB_OPERATOR_TOKEN: OPERATOR, DB_NODE_NAME: this.name, ...this.env } });
    this.proc = proc;
    // a restarted node listens on a new port: keep its first URL's port for the advertise URL
    this.url = url;
    this.agent?.destroy();
    this.agent = new https.Agent({ keepAlive: true, maxSockets: 64, ca: fs.readFileSync(path.join(this.dir, 'tls/cert.pem'), 'utf8') });
    return this;
  }

  get alive() {
    return this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  async kill(signal = 'SIGKILL') {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGCONT');
    p.kill(signal);
    await exited;
  }
}

/** One request; resolves {status, headers, json} or rejects on a network error / timeout. */
function request(node, method, p, { body, token = TOKEN, headers = {}, timeoutMs = 2000 } = {}) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = https.request(
      node.url + p,
      { method, agent: node.agent, headers: { authorization: `Bearer ${token}`, ...(payload ? { 'content-type': 'application/json' } : {}), ...headers }, timeout: timeoutMs },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => {
          let json;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode, headers: res.headers, json });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(payload);
  });
}

async function startCluster({ nodes, etcd, env }) {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-failover-'));
  const out = [];
  for (let i = 0; i < nodes; i++) {
    const name = `n${i + 1}`;
    const dir = path.join(base, name);
    // a fixed port per node so its advertise URL survives restarts
    const port = await require('@mmdb/replication').freePort();
    const extra = etcd ? { DB_ETCD_ENDPOINTS: etcd.endpoint, DB_PORT: String(port), DB_ADVERTISE_URL: `https://127.0.0.1:${port}` } : { DB_PORT: String(port) };
    out.push(await new Node(name, dir, { ...extra, ...env }).start());
  }
  return { nodes: out, base };
}

/**
 * The node answering /ready?require=write with 200, or null: every live node is asked at
 * once, and the first 200 wins; a node that does not answer within `waitMs` (a SIGSTOPped
 * one) does not hold up the answer.
 */
function writer(nodes, waitMs = 300) {
  const live = nodes.filter((n) => n.alive);
  if (!live.length) return Promise.resolve(null);
  return new Promise((resolve) => {
    let pending = live.length;
    const timer = setTimeout(() => resolve(null), waitMs);
    for (const n of live) {
      request(n, 'GET', '/ready?require=write', { timeoutMs: 1000 })
        .catch(() => null)
        .then((r) => {
          if (r && r.status === 200) {
            clearTimeout(timer);
            resolve(n);
          } else if (--pending === 0) {
            clearTimeout(timer);
            resolve(null);
          }
        });
    }
  });
}

module.exports = { TENANT, TOKEN, OPERATOR, Node, request, startCluster, writer };
