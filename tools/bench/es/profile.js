// Preloaded into the server by `ES_BENCH_PROFILE=<dir> node tools/bench/es/bench.js …`
// (NODE_OPTIONS=--require …; --cpu-prof is not allowed in NODE_OPTIONS): a CPU profile of the
// whole server run, written to <dir>/es-server.cpuprofile when the bench stops the server.
'use strict';
const fs = require('fs');
const path = require('path');
const inspector = require('inspector');

const dir = process.env.ES_BENCH_PROFILE;
const session = new inspector.Session();
session.connect();
session.post('Profiler.enable', () => session.post('Profiler.start'));
process.once('SIGTERM', () => {
  session.post('Profiler.stop', (err, r) => {
    if (!err) fs.writeFileSync(path.join(dir, 'es-server.cpuprofile'), JSON.stringify(r.profile));
    process.exit(0);
  });
});
