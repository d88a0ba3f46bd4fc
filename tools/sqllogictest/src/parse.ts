/** Reads sqllogictest scripts (format: FORMAT.wiki of the corpus). */
export type Condition = { kind: 'skipif' | 'onlyif'; engine: string };

export type SltRecord =
  | { kind: 'statement'; line: number; conditions: Condition[]; expectError: boolean; sql: string }
  | { kind: 'query'; line: number; conditions: Condition[]; types: string; sort: 'nosort' | 'rowsort' | 'valuesort'; label?: string; sql: string; expected: string[] }
  | { kind: 'hash-threshold'; line: number; conditions: Condition[]; n: number }
  | { kind: 'halt'; line: number; conditions: Condition[] };

export function parseSlt(text: string): SltRecord[] {
  const lines = text.split(/\r?\n/);
  const out: SltRecord[] = [];
  let i = 0;
  while (i < lines.length) {
    // skip blank lines between records
    if (lines[i].trim() === '') { i++; continue; }
    const block: { text: string; line: number }[] = [];
    while (i < lines.length && lines[i].trim() !== '') {
      if (!lines[i].startsWith('#')) block.push({ text: lines[i], line: i + 1 });
      i++;
    }
    if (!block.length) continue;
    const conditions: Condition[] = [];
    let k = 0;
    while (k < block.length) {
      const m = /^(skipif|onlyif)\s+(\S+)/.exec(block[k].text);
      if (!m) break;
      conditions.push({ kind: m[1] as 'skipif', engine: m[2] });
      k++;
    }
    if (k >= block.length) continue;
    const head = block[k].text.trim().split(/\s+/);
    const line = block[k].line;
    const rest = block.slice(k + 1).map((b) => b.text);
    switch (head[0]) {
      case 'statement':
        out.push({ kind: 'statement', line, conditions, expectError: head[1] === 'error', sql: rest.join('\n') });
        break;
      case 'query': {
        const sep = rest.findIndex((l) => l.trim() === '----');
        const sql = (sep < 0 ? rest : rest.slice(0, sep)).join('\n');
        const expected = sep < 0 ? [] : rest.slice(sep + 1);
        const sort = (['nosort', 'rowsort', 'valuesort'].includes(head[2]) ? head[2] : 'nosort') as 'nosort';
        const label = head.find((h) => h.startsWith('label-'));
        out.push({ kind: 'query', line, conditions, types: head[1] ?? '', sort, label, sql, expected });
        break;
      }
      case 'hash-threshold':
        out.push({ kind: 'hash-threshold', line, conditions, n: Number(head[1]) });
        break;
      case 'halt':
        out.push({ kind: 'halt', line, conditions });
        break;
      default:
        break;
    }
  }
  return out;
}

/** Whether a record applies to an engine that answers to `name` (we run as `sqlite`). */
export function applies(conditions: readonly Condition[], name = 'sqlite'): boolean {
  for (const c of conditions) {
    if (c.kind === 'skipif' && c.engine === name) return false;
    if (c.kind === 'onlyif' && c.engine !== name) return false;
  }
  return true;
}
