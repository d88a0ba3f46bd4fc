// Through the HTTP app: starts the BUILT server (dist/apps/api/main.js; `npx tsc -b tsconfig.build.json`)
// with durable commits (DB_SYNC=true), loads rows through POST /rows/{schema}/_batch and
// times GET /fts/{table}/{field} over one keep-alive TLS 1.3 connection.
'use strict';
const fs = require('fs');
const https = require('https');
const os = require('os');
const path = require('path');
const { manifest } = require('./ours');

const { ROOT, startBuiltServer } = require('../server');
const TENANT = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const TOKEN = 'fts-bench-token-0123456789';

function startServer(dataDir) {
  return startBuiltServer(dataDir, {
    tenant: TENANT,
    token: TOKEN,
    env: { DB_OPERATOR_TOKEN: 'fts-bench-operator-0123456789', DB_SYNC: 'true' },
  });
}

class HttpsOurs {
  static async open() {
    if (!fs.existsSync(path.join(ROOT, 'dist/apps/api/main.js'))) return null;
    const o = new HttpsOurs();
    o.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fts-bench-https-'));
    const { proc, url } = await startServer(o.dir);
    o.proc = proc;
    o.url = url;
    o.agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: fs.readFileSync(path.join(o.dir, 'tls/cert.pem'), 'utf8') });
    await o.req('POST', `/v1/tenants/${TENANT}/schemas`, manifest(), 'text/plain');
    return o;
  }
  req(method, p, body, contentType = 'application/json') {
    return new Promise((resolve, reject) => {
      const headers = { authorization: `Bearer ${TOKEN}` };
      if (body !== undefined) headers['content-type'] = contentType;
      const r = https.request(this.url + p, { method, headers, agent: this.agent }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200) return reject(new Error(`${method} ${p}: ${res.statusCode} ${text.slice(0, 300)}`));
          resolve(JSON.parse(text));
        });
      });
      r.on('error', reject);
      r.end(body);
    });
  }
  insertBatch(docs) {
    return this.req('POST', `/v1/tenants/${TENANT}/rows/bench.docs/_batch`, JSON.stringify(docs.map((d) => ({ id: d.id, body: d.body }))));
  }
  async search(q, limit, opts = {}) {
    const qs = new URLSearchParams({ q, limit: String(limit), ...(opts.feedback ? { feedback: opts.feedback } : {}) });
    return (await this.req('GET', `/v1/tenants/${TENANT}/fts/bench.docs/body?${qs}`)).map((h) => h.doc_id);
  }
  async close() {
    this.agent.destroy();
    const exited = new Promise((r) => this.proc.once('exit', r));
    this.proc.kill('SIGTERM');
    await exited;
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

module.exports = { HttpsOurs };
