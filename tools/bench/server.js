// Starts the BUILT server (dist/apps/api/main.js; `npm run build`) on 127.0.0.1 with its data in
// `dataDir` and a bootstrap tenant, for the benchmarks that measure through HTTPS. Resolves with
// the child process, the URL it printed ("listening on <url>") and `output()`, its stdout so far.
// Node runs it with the flags `npm start` gives it (`nodeArgs`, default NODE_ARGS: a 64 MB
// young-generation semi-space, tools/bench/stalls README "Steady-state stalls").
'use strict';
const { spawn } = require('child_process');
const path = require('path');

const ROOT = path.resolve(__dirname, '../..');

const NODE_ARGS = ['--max-semi-space-size=64'];

function startBuiltServer(dataDir, { tenant, token, env = {}, nodeArgs = NODE_ARGS }) {
  const proc = spawn(process.execPath, [...nodeArgs, path.join(ROOT, 'dist/apps/api/main.js')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      DB_DATA_DIR: dataDir,
      DB_PORT: '0',
      DB_HOST: '127.0.0.1',
      DB_LOG_LEVEL: 'warn',
      DB_BOOTSTRAP_TENANT: tenant,
      DB_BOOTSTRAP_TOKEN: token,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stderr.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start: ${out}\n${err}`)), 30_000);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, url: m[1], output: () => out });
      }
    });
    proc.on('exit', (code) => reject(new Error(`server exited with ${code}: ${err}`)));
  });
}

/** One HTTPS request with a bearer token; resolves {status, text, json} (json undefined for an empty or non-JSON body). */
function httpsRequest(agent, url, token, method, p, body, contentType) {
  const https = require('https');
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const req = https.request(url + p, {
      agent, method,
      headers: { authorization: `Bearer ${token}`, ...(data !== undefined ? { 'content-type': contentType ?? 'application/json', 'content-length': Buffer.byteLength(data) } : {}) },
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined; // not JSON (an error page): the caller has status and text
        }
        resolve({ status: res.statusCode, text, json });
      });
    });
    req.on('error', reject);
    if (data !== undefined) req.write(data);
    req.end();
  });
}

/** The number after `--<name>` on the command line, else `dflt`. */
function numArg(name, dflt) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}

module.exports = { ROOT, NODE_ARGS, startBuiltServer, httpsRequest, numArg };
