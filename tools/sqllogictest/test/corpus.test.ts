/**
 * Runs every public sqllogictest file in-process through the engine over a real store (sync off, temp dir)
 * and asserts the records that apply to us pass. Files whose statements are partly out of scope
 * (triggers, REINDEX) assert their known pass count instead of zero failures.
 */
import { join } from 'path';
import { existsSync, readdirSync } from 'fs';
import { formatReport, inProcessTarget, runSlt } from '../src';

const CORPUS = join(__dirname, '../../../../shared/conformance/sqllogictest');

/** Out-of-scope records (CREATE TRIGGER, REINDEX of an unknown name, …): how many fail at most. */
const ALLOWED_FAILURES: Record<string, number> = {
  // triggers are not in our SQL scope (unsupported_sql)
  'evidence/slt_lang_createtrigger.test': 20,
  'evidence/slt_lang_droptrigger.test': 3,
  // BLOB literals (x'..') are not supported
  'evidence/in1.test': 6,
  // 1<<63 in a column: stored integers are JS safe integers (±2^53), so these inserts are refused
  'evidence/slt_lang_aggfunc.test': 6,
};

function files(): string[] {
  const out: string[] = [];
  const walk = (dir: string, rel: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name), rel ? `${rel}/${e.name}` : e.name);
      else if (e.name.endsWith('.test')) out.push(rel ? `${rel}/${e.name}` : e.name);
    }
  };
  if (existsSync(CORPUS)) walk(CORPUS, '');
  return out.sort();
}

describe('sqllogictest corpus', () => {
  const list = files();
  it('finds the corpus', () => {
    expect(list.length).toBeGreaterThan(5);
  });
  for (const f of list) {
    it(f, async () => {
      const t = await inProcessTarget();
      try {
        const r = await runSlt(join(CORPUS, f), t);
        console.log(formatReport({ ...r, file: f }) + (r.failures.length ? `\n  first failure line ${r.failures[0].line}: ${r.failures[0].reason}` : ''));
        expect(r.passed).toBeGreaterThan(0);
        expect(r.failed).toBeLessThanOrEqual(ALLOWED_FAILURES[f] ?? 0);
      } finally {
        await t.close?.();
      }
    }, 120_000);
  }
});
