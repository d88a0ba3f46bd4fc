/** Runs a sqllogictest script against a SQL target and counts passed/failed/skipped records. */
import { readFileSync } from 'fs';
import { applies, parseSlt } from './parse';
import { compareResult, renderRows, type SltValue } from './format';

/** What the runner needs from an engine: run one statement; a query answers its rows. */
export interface SltTarget {
  statement(sql: string): Promise<void>;
  query(sql: string): Promise<SltValue[][]>;
  close?(): Promise<void>;
}

export interface SltFailure { line: number; sql: string; reason: string }
export interface SltReport { file: string; passed: number; failed: number; skipped: number; failures: SltFailure[] }

export async function runSlt(file: string, target: SltTarget, opts: { maxFailures?: number } = {}): Promise<SltReport> {
  const records = parseSlt(readFileSync(file, 'utf8'));
  const report: SltReport = { file, passed: 0, failed: 0, skipped: 0, failures: [] };
  const fail = (line: number, sql: string, reason: string) => {
    report.failed++;
    if (report.failures.length < (opts.maxFailures ?? 50)) report.failures.push({ line, sql, reason });
  };
  for (const r of records) {
    if (!applies(r.conditions)) {
      if (r.kind === 'statement' || r.kind === 'query') report.skipped++;
      continue;
    }
    if (r.kind === 'halt') break;
    if (r.kind === 'hash-threshold') continue;
    if (r.kind === 'statement') {
      let err: unknown = null;
      try { await target.statement(r.sql); } catch (e) { err = e; }
      if (r.expectError === (err !== null)) report.passed++;
      else fail(r.line, r.sql, r.expectError ? 'expected an error' : `error: ${(err as Error).message}`);
      continue;
    }
    let rows: SltValue[][];
    try {
      rows = await target.query(r.sql);
    } catch (e) {
      fail(r.line, r.sql, `error: ${(e as Error).message}`);
      continue;
    }
    const values = renderRows(rows, r.types, r.sort);
    const why = compareResult(values, rows.length, r.types.length, r.expected);
    if (why === null) report.passed++;
    else fail(r.line, r.sql, why);
  }
  return report;
}

export function formatReport(r: SltReport): string {
  return `${r.file}: passed ${r.passed}, failed ${r.failed}, skipped ${r.skipped}`;
}
