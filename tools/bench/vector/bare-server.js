// The floor of the vector benchmark's HTTPS rows: a bare node:https server (no framework, no
// auth, no routing, no JSON) in its own process that reads a request's body and answers `[]`.
// A request to it pays only for what every HTTPS round trip between two processes on this
// machine pays: TLS, Node's HTTP parser, and waking each process.
//   node tools/bench/vector/bare-server.js <dir holding cert.pem and key.pem>
const fs = require('node:fs');
const https = require('node:https');
const path = require('node:path');

const dir = process.argv[2];
const server = https.createServer(
  { cert: fs.readFileSync(path.join(dir, 'cert.pem')), key: fs.readFileSync(path.join(dir, 'key.pem')), minVersion: 'TLSv1.3' },
  (req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 2 });
      res.end('[]');
    });
  },
);
server.keepAliveTimeout = 600_000;
server.listen(0, '127.0.0.1', () => console.log(`listening on https://127.0.0.1:${server.address().port}`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
