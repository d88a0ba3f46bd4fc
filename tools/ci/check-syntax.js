#!/usr/bin/env node
/**
 * Parses every tracked plain-JavaScript file under tools/ and apps/ with `node --check`
 * (ESLint ignores *.js here and tsc does not see them, so a syntax error in a benchmark
 * script would otherwise only show when someone runs it). Exits 1 naming the bad files.
 */
const { execFileSync, spawnSync } = require('child_process');
const path = require('path');

const root = path.join(__dirname, '../..');
const files = execFileSync('git', ['ls-files', '--', 'tools/*.js', 'apps/*.js', '.ci/*.js'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter(Boolean);
const bad = [];
for (const f of files) {
  const r = spawnSync(process.execPath, ['--check', f], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) bad.push(`${f}\n${r.stderr.trim()}`);
}
if (bad.length) {
  console.error(`syntax errors in ${bad.length} file(s):\n${bad.join('\n\n')}`);
  process.exit(1);
}
console.log(`node --check: ${files.length} JavaScript files parse`);
