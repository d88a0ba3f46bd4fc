// One HTTPS JSON request for the benchmarks: resolves with the parsed body, rejects on a status ≥ 300.
'use strict';
const { httpsRequest } = require('./server');

/** httpsRequest (server.js), refusing a status ≥ 300: resolves with the parsed body. */
async function request(agent, url, token, method, p, body, contentType) {
  const r = await httpsRequest(agent, url, token, method, p, body, contentType);
  if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${r.text.slice(0, 300)}`);
  return r.json ?? null;
}

/** `--name value` of the command line as a number, else `def`. */
function numberOption(args, name, def) {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
}

module.exports = { request, numberOption };
