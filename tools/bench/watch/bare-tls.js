/**
 * The peer of the watch benchmark's memory phase (idle-memory.js): a bare node HTTPS server (no
 * framework, no database) that answers every request with a held-open `text/event-stream`
 * response after one event, as a watch stream is held. Its memory per open connection is what
 * node and OpenSSL cost for an idle TLS response, before anything of ours. Forked by the bench
 * with the same flags and probe as the server (--expose-gc, memory.js); args: key and cert paths.
 * Sends {port} once listening.
 */
'use strict';
const fs = require('fs');
const https = require('https');

const [keyPath, certPath] = process.argv.slice(2);
const held = new Set();
const server = https.createServer({ key: fs.readFileSync(keyPath), cert: fs.readFileSync(certPath) }, (req, res) => {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  res.write('event: position\ndata: {"lsn":0,"epoch":0}\n\n');
  held.add(res);
  req.on('close', () => held.delete(res));
});
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('disconnect', () => process.exit(0));
