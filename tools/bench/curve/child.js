#!/usr/bin/env node
// One (area, system, size) of the cost curve in its own process, so its RSS is its own:
//   node tools/bench/curve/child.js sql|fts|graph ours|<peer> <size>
// Prints progress on stderr and one `RESULT {json}` line on stdout (read by run.js).
const path = require('path');
process.env.SWC_NODE_PROJECT = process.env.SWC_NODE_PROJECT || path.join(__dirname, '../../..', 'tsconfig.base.json');
require('@swc-node/register');
const [area, system, size] = process.argv.slice(2);
const run = { sql: () => require('./sql.ts').runSql, fts: () => require('./fts.ts').runFts, graph: () => require('./graph.ts').runGraph }[area];
if (!run) throw new Error(`unknown area ${area}`);
run()(system, Number(size)).then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.stdout.write(`RESULT ${JSON.stringify({ area, system, size: Number(size), error: String(e.message ?? e) })}\n`);
    process.exit(1);
  },
);
