/** Usage: npx ts-node … or `node tools/sqllogictest/dist/cli.js <file.test>...` — prints passed/failed/skipped per file. */
import { runSlt, formatReport } from './runner';
import { inProcessTarget } from './targets';

async function main(): Promise<void> {
  const files = process.argv.slice(2);
  const verbose = process.env.SLT_VERBOSE === '1';
  for (const f of files) {
    const t = await inProcessTarget();
    const r = await runSlt(f, t);
    await t.close?.();
    console.log(formatReport(r));
    if (verbose) for (const x of r.failures) console.log(`  line ${x.line}: ${x.reason}\n    ${x.sql.replace(/\n/g, ' ')}`);
  }
}

void main();
