#!/usr/bin/env node
// Runs sqllogictest files through the engine in-process: node tools/sqllogictest/slt.js <file.test>...
// (TypeScript is compiled on the fly with @swc/register-free swc: we reuse jest's transformer via @swc/core.)
const { transformSync } = require('/work/main/node_modules/@swc/core');
const fs = require('fs');
const path = require('path');
const Module = require('module');
const root = path.resolve('/work/main');
const origResolve = Module._resolveFilename;
Module._resolveFilename = function (request, parent, ...rest) {
  const m = /^@mmdb\/([a-z-]+)$/.exec(request);
  if (m) request = path.join(root, 'libs', m[1], 'src/index.ts');
  return origResolve.call(this, request, parent, ...rest);
};
require.extensions['.ts'] = function (module, filename) {
  const src = fs.readFileSync(filename, 'utf8');
  const out = transformSync(src, { filename, jsc: { parser: { syntax: 'typescript', decorators: true }, target: 'es2022' }, module: { type: 'commonjs' } });
  module._compile(out.code, filename);
};
const { parseSlt, applies, renderRows, inProcessTarget } = require('/work/main/tools/sqllogictest/src/index.ts');
const D = require('/work/main/node_modules/better-sqlite3');
(async () => {
  const [file, maxShow] = process.argv.slice(2);
  const recs = parseSlt(fs.readFileSync(file, 'utf8'));
  const t = await inProcessTarget();
  const db = new D(':memory:'); db.defaultSafeIntegers(true);
  let shown = 0;
  for (const r of recs) {
    if (!applies(r.conditions)) continue;
    if (r.kind === 'statement') { try { db.exec(r.sql); } catch {} try { await t.statement(r.sql); } catch (e) { if (!r.expectError) { console.log('STMT ERR line', r.line, e.message, r.sql.slice(0,200)); } } continue; }
    if (r.kind !== 'query') continue;
    let exp, got;
    try { exp = renderRows(db.prepare(r.sql).raw().all(), r.types, r.sort); } catch (e) { exp = 'ERR ' + e.message; }
    try { got = renderRows(await t.query(r.sql), r.types, r.sort); } catch (e) { got = 'ERR ' + e.message; }
    if (JSON.stringify(exp) !== JSON.stringify(got)) {
      console.log('--- line', r.line, r.sql.replace(/\s+/g, ' ').slice(0, 400));
      console.log(' sqlite:', JSON.stringify(exp).slice(0, 300));
      console.log(' ours  :', JSON.stringify(got).slice(0, 300));
      if (++shown >= Number(maxShow || 10)) break;
    }
  }
  await t.close();
})();
