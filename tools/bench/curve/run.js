#!/usr/bin/env node
// The cost curve (issue 25 §7): each area's query set at several sizes, ours beside its peer,
// every (area, system, size) in its own child process (child.js), one after another. Prints
// per query the time at each size, its growth between sizes beside the peer's, and each
// process's RSS. See README.md here.
//
//   node tools/bench/curve/run.js [--areas sql,fts,graph] [--sql 100000,1000000,10000000]
//     [--fts 100000,1000000] [--fts-vocab 50000] [--graph 1000000,10000000] [--json out.json] [--report in.json...]
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { printReport } = require('./report');

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const sizes = (name, dflt) => opt(name, dflt).split(',').filter(Boolean).map(Number);
const PEERS = { sql: 'sqlite', fts: 'fts5', graph: 'sqlite' };

function child(area, system, size) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const heap = String(opt('heap', 16000));
    const p = spawn(process.execPath, [`--max-old-space-size=${heap}`, '--expose-gc', path.join(__dirname, 'child.js'), area, system, String(size)], {
      stdio: ['ignore', 'pipe', 'inherit'],
      // as `npm start` runs the server (apps/api/README.md): freed large buffers go back to the system
      env: { ...process.env, MALLOC_MMAP_THRESHOLD_: process.env.MALLOC_MMAP_THRESHOLD_ ?? '1048576', CURVE_FTS_VOCAB: opt('fts-vocab', process.env.CURVE_FTS_VOCAB ?? '50000') },
    });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('RESULT '));
      const r = line ? JSON.parse(line.slice(7)) : { area, system, size, error: `exit ${code}` };
      r.wallS = (Date.now() - t0) / 1000;
      r.loadavg = os.loadavg().map((x) => x.toFixed(2)).join(' ');
      resolve(r);
    });
  });
}

async function main() {
  const inputs = [];
  for (let i = 0; i < args.length; i++) if (args[i] === '--report') inputs.push(args[i + 1]);
  if (inputs.length) {
    printReport(inputs.flatMap((f) => JSON.parse(fs.readFileSync(f, 'utf8'))));
    return;
  }
  const plan = { sql: sizes('sql', '100000,1000000,10000000'), fts: sizes('fts', '100000,1000000'), graph: sizes('graph', '1000000,10000000') };
  const areas = opt('areas', 'sql,fts,graph').split(',');
  const out = opt('json', path.join(os.tmpdir(), `curve-${Date.now()}.json`));
  const results = [];
  console.error(`results go to ${out} as they come (node tools/bench/curve/run.js --report ${out} prints them again)`);
  for (const area of areas) {
    for (const size of plan[area]) {
      // ours and the peer at the same size, back to back
      for (const system of ['ours', PEERS[area]]) {
        const r = await child(area, system, size);
        results.push(r);
        fs.writeFileSync(out, JSON.stringify(results, null, 1));
        console.error(`${area} ${system} ${size}: ${r.error ?? 'done'} in ${r.wallS.toFixed(0)} s (load average ${r.loadavg})`);
      }
    }
  }
  console.log(`node ${process.version}, ${os.cpus().length} cores, load average at end ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  printReport(results);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
