/** Output: rows as an aligned table (psql style), JSON, NDJSON or CSV. */
export type Format = 'table' | 'json' | 'ndjson' | 'csv';

export function cell(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** Column names: the given ones, else every key in order of first appearance. */
export function columnsOf(rows: readonly Record<string, unknown>[], given?: readonly string[]): string[] {
  if (given?.length) return [...given];
  const seen = new Set<string>();
  for (const r of rows) for (const k of Object.keys(r)) seen.add(k);
  return [...seen];
}

const width = (s: string) => [...s].length;
const isNum = (v: unknown) => typeof v === 'number' || typeof v === 'bigint';

export function renderTable(rows: readonly Record<string, unknown>[], given?: readonly string[]): string {
  const cols = columnsOf(rows, given);
  if (cols.length === 0) return `(${rows.length} row${rows.length === 1 ? '' : 's'})\n`;
  const cells = rows.map((r) => cols.map((c) => cell(r[c]).replace(/\n/g, '\\n')));
  const w = cols.map((c, i) => Math.max(width(c), ...cells.map((r) => width(r[i]))));
  const pad = (s: string, n: number, right: boolean) => (right ? ' '.repeat(n - width(s)) + s : s + ' '.repeat(n - width(s)));
  const lines = [cols.map((c, i) => ` ${pad(c, w[i], false)} `).join('|'), w.map((n) => '-'.repeat(n + 2)).join('+')];
  rows.forEach((r, j) => lines.push(cols.map((c, i) => ` ${pad(cells[j][i], w[i], isNum(r[c]))} `).join('|')));
  lines.push(`(${rows.length} row${rows.length === 1 ? '' : 's'})`);
  return lines.map((l) => l.replace(/\s+$/, '')).join('\n') + '\n';
}

export function csvField(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = typeof v === 'object' ? JSON.stringify(v) : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function render(rows: readonly Record<string, unknown>[], format: Format, given?: readonly string[]): string {
  switch (format) {
    case 'json':
      return JSON.stringify(rows, null, 2) + '\n';
    case 'ndjson':
      return rows.map((r) => JSON.stringify(r) + '\n').join('');
    case 'csv': {
      const cols = columnsOf(rows, given);
      return [cols.map(csvField).join(','), ...rows.map((r) => cols.map((c) => csvField(r[c])).join(','))].join('\n') + '\n';
    }
    default:
      return renderTable(rows, given);
  }
}
