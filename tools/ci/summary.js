// Prints the CI totals from jest's --json output plus the lint/typecheck checks:
// one line "N passed, N failed" (and ", N skipped" when any were skipped).
const fs = require('fs');
const [file, checksPassed = '0', checksFailed = '0'] = process.argv.slice(2);
let passed = Number(checksPassed);
let failed = Number(checksFailed);
let skipped = 0;
let ok = true;
try {
  const r = JSON.parse(fs.readFileSync(file, 'utf8'));
  passed += r.numPassedTests;
  failed += r.numFailedTests + r.numRuntimeErrorTestSuites;
  skipped += r.numPendingTests + r.numTodoTests;
  for (const s of r.testResults) {
    if (s.status === 'failed') console.log(`FAILED suite: ${s.name}${s.message ? `\n${s.message.slice(0, 2000)}` : ''}`);
  }
  if (r.numTotalTests === 0) ok = false;
} catch (e) {
  console.log(`no jest results in ${file}: ${e.message}`);
  failed += 1;
  ok = false;
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(ok && failed === 0 ? 0 : 1);
