// Preloaded into the server by per-statement.ts (`--require`): SIGWINCH starts V8's sampling heap
// profiler with collected objects included (what a statement allocates, not what survives); the
// next SIGWINCH writes the profile to $HEAP_OUT. (SIGUSR2 would stop Nest: a shutdown signal.)
'use strict';
const inspector = require('inspector');
const fs = require('fs');
const session = new inspector.Session();
session.connect();
let on = false;
process.on('SIGWINCH', () => {
  on = !on;
  if (on) {
    session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  } else {
    session.post('HeapProfiler.stopSampling', (e, r) => {
      if (e) return;
      // written whole, then renamed: the bench waits for the name
      fs.writeFileSync(`${process.env.HEAP_OUT}.part`, JSON.stringify(r.profile));
      fs.renameSync(`${process.env.HEAP_OUT}.part`, process.env.HEAP_OUT);
    });
  }
});
