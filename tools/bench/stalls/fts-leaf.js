#!/usr/bin/env node
/**
 * An every-match fts leaf under an aggregation (the ES bool + terms aggregation's plan shape:
 * `fts_search` with `limit: null`, a filter on `n`, a GROUP BY tag), in-process over the built libs
 * (`npm run build`): the ES benchmark's documents as rows of a `[[fulltext]]` table, then every
 * word of its vocabulary, three rounds. Prints per query the mean time and the fts search's share,
 * and the longest stretch **on the CPU** between two turns of the event loop (a setImmediate
 * chain reading the thread's schedstat: the host's run-queue wait is not counted, GC is).
 * Issue 25 §1: the leaf's loop over its hits is sliced (README.md "The fts leaf's preload, sliced").
 *
 *   node --max-semi-space-size=64 tools/bench/stalls/fts-leaf.js --docs 200000    # ~1 min
 */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { numArg } = require('../server');
const ROOT = path.resolve(__dirname, '../../..');
const { TenantStore } = require(path.join(ROOT, 'libs/storage/dist/index.js'));
const { FtsParticipant } = require(path.join(ROOT, 'libs/fts/dist/index.js'));
const { SqlEngine } = require(path.join(ROOT, 'libs/sql/dist/index.js'));
const { TOML, docAt, WORDS } = require('../es/data');

const DOCS = numArg('docs', 200_000);
const ROUNDS = numArg('rounds', 3);

const col = (name) => ({ kind: 'col', name });
const plan = (w) => ({
  op: 'aggregate',
  input: { op: 'filter', input: { op: 'fts_search', schema: 'bench.docs', field: 'body', query: w, limit: null }, predicate: { kind: 'binary', op: '<', left: col('n'), right: { kind: 'lit', value: 550 } } },
  group: [{ name: 'tag', expr: col('tag') }],
  aggregates: [{ name: 'c', fn: 'count', args: [], star: true }],
});

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-fts-leaf-'));
  const fts = new FtsParticipant();
  const store = await TenantStore.open({ dir, sync: false, participants: [fts] });
  try {
    const sql = new SqlEngine(store, undefined, { sources: { fts } });
    await store.registerSchema(TOML);
    for (let i = 0; i < DOCS; i += 5000) {
      await store.commit({ changes: Array.from({ length: Math.min(5000, DOCS - i) }, (_, j) => ({ op: 'put', schema: 'bench.docs', row: docAt(i + j) })) });
    }
    await sql.run('SELECT count(*) FROM bench.docs');
    await sql.exec.tables.settled();
    const search = fts.search.bind(fts);
    let searchMs = 0;
    fts.search = async (...a) => {
      const t = performance.now();
      try {
        return await search(...a);
      } finally {
        searchMs += performance.now() - t;
      }
    };
    for (const w of WORDS) await sql.runPlan(plan(w)); // warm: plans, the table's key map
    searchMs = 0;
    const sf = `/proc/self/task/${process.pid}/schedstat`;
    const cpuNow = () => Number(fs.readFileSync(sf, 'utf8').split(' ')[0]) / 1e6;
    let last = cpuNow();
    let on = true;
    const stretches = [];
    const ping = () => {
      const c = cpuNow();
      stretches.push(c - last);
      last = c;
      if (on) setImmediate(ping);
    };
    setImmediate(ping);
    let total = 0;
    for (let r = 0; r < ROUNDS; r++) {
      for (const w of WORDS) {
        const t = performance.now();
        await sql.runPlan(plan(w));
        total += performance.now() - t;
      }
    }
    on = false;
    stretches.sort((a, b) => b - a);
    const n = ROUNDS * WORDS.length;
    console.log(`\n### Every-match fts leaf + filter + GROUP BY, ${DOCS.toLocaleString()} documents, ${n} queries (load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')})\n`);
    console.log('| query mean ms | of it the fts search ms | longest on-CPU stretch between loop turns ms | next four |');
    console.log('|---|---|---|---|');
    console.log(`| ${(total / n).toFixed(2)} | ${(searchMs / n).toFixed(2)} | ${stretches[0].toFixed(1)} | ${stretches.slice(1, 5).map((x) => x.toFixed(1)).join(', ')} |`);
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
