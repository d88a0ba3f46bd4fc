/**
 * The subscriber side of the watch benchmark, in its own process (forked by bench.js, IPC):
 * opens `n` SSE streams (raw HTTPS, one TLS connection each), parses their events, and keeps
 * the time each changed row's event arrived, per stream. Messages:
 *   in  {open: {url, token, ca, paths: [...]}} → out {ready: true} once every stream sent its first event
 *   in  {report: true}                         → out {report: {"table:id": [recvMs, ...]}, events, bytes}
 *   in  {close: true}                          → closes every stream and exits
 */
'use strict';
const https = require('https');

const now = () => Number(process.hrtime.bigint()) / 1e6; // (the host's monotonic clock, as bench.js)
const recv = new Map(); // "table:id" → [ms…]
let events = 0;
let bytes = 0;
const streams = [];

function open(url, token, ca, path) {
  return new Promise((resolve, reject) => {
    let started = false;
    const req = https.request(url + path, { headers: { accept: 'text/event-stream', authorization: `Bearer ${token}` }, ca, agent: false }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return reject(new Error(`${path}: ${res.statusCode}`));
      }
      res.setEncoding('utf8');
      let buf = '';
      res.on('data', (d) => {
        bytes += d.length;
        buf += d;
        let end;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          if (!block.includes('event: ')) continue;
          if (!started) {
            started = true;
            resolve();
          }
          if (!block.includes('event: change')) continue;
          events++;
          const at = now();
          const data = JSON.parse(block.slice(block.indexOf('data: ') + 6));
          for (const c of data.changes) {
            if (c.op === 'delete') continue;
            const k = `${c.schema}:${c.key[0]}`;
            const list = recv.get(k);
            if (list) list.push(at);
            else recv.set(k, [at]);
          }
        }
      });
    });
    req.on('error', reject);
    req.end();
    streams.push(req);
  });
}

process.on('message', async (m) => {
  if (m.open) {
    const { url, token, ca, paths } = m.open;
    // opened a few at a time: 200 TLS handshakes at once would only measure the handshakes
    for (let i = 0; i < paths.length; i += 20) await Promise.all(paths.slice(i, i + 20).map((p) => open(url, token, ca, p)));
    process.send({ ready: true });
  } else if (m.report) {
    process.send({ report: Object.fromEntries(recv), events, bytes });
    recv.clear();
    events = 0;
  } else if (m.close) {
    for (const r of streams) r.destroy();
    process.exit(0);
  }
});
