// One HTTPS JSON request for the benchmarks: resolves with the parsed body, rejects on a status ≥ 300.
'use strict';
const https = require('https');

function request(agent, url, token, method, p, body, contentType) {
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
        if (res.statusCode >= 300) return reject(new Error(`${method} ${p}: ${res.statusCode} ${text.slice(0, 300)}`));
        resolve(text ? JSON.parse(text) : null);
      });
    });
    req.on('error', reject);
    req.end(data);
  });
}

/** `--name value` of the command line as a number, else `def`. */
function numberOption(args, name, def) {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
}

module.exports = { request, numberOption };
