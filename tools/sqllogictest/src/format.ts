/** Rendering and comparing results as the sqllogictest driver does. */
import { createHash } from 'crypto';

/** A value as a driver receives it: integers as bigint, reals as number. */
export type SltValue = null | bigint | number | string;

function intOf(v: SltValue): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? BigInt(Math.trunc(v)) : 0n;
  const m = /^\s*([+-]?\d+)/.exec(v ?? '');
  return m ? BigInt(m[1]) : 0n;
}

function realOf(v: SltValue): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  const m = /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?/.exec(v ?? '');
  return m ? Number(m[0]) : 0;
}

/** `%!.15g`, SQLite's text form of a real. */
export function realText(n: number): string {
  if (n === 0) return '0.0';
  const exp = Math.floor(Math.log10(Math.abs(n)));
  if (exp < -4 || exp >= 15) {
    const [mant, e] = n.toExponential(14).split('e');
    const m = mant.includes('.') ? mant.replace(/0+$/, '').replace(/\.$/, '.0') : mant;
    const en = Number(e);
    return `${m}e${en < 0 ? '-' : '+'}${String(Math.abs(en)).padStart(2, '0')}`;
  }
  const s = n.toPrecision(15);
  return s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '.0') : `${s}.0`;
}

export function renderValue(v: SltValue, type: string): string {
  if (v === null) return 'NULL';
  switch (type) {
    case 'I': return intOf(v).toString();
    case 'R': {
      const s = realOf(v).toFixed(3);
      return s === '-0.000' ? '0.000' : s;
    }
    default: {
      const s = typeof v === 'bigint' ? v.toString() : typeof v === 'number' ? realText(v) : v;
      if (s === '') return '(empty)';
      return s.replace(/[\x00-\x1f\x7f-\uffff]/g, '@');
    }
  }
}

const strcmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Rendered values in result order after the record's sort mode. */
export function renderRows(rows: SltValue[][], types: string, sort: string): string[] {
  let rendered = rows.map((r) => r.map((v, i) => renderValue(v, types[i] ?? 'T')));
  if (sort === 'rowsort') {
    rendered = rendered.slice().sort((a, b) => {
      for (let i = 0; i < Math.min(a.length, b.length); i++) { const d = strcmp(a[i], b[i]); if (d) return d; }
      return a.length - b.length;
    });
  }
  const flat = rendered.flat();
  if (sort === 'valuesort') flat.sort(strcmp);
  return flat;
}

export function md5Values(values: string[]): string {
  const h = createHash('md5');
  for (const v of values) h.update(v + '\n');
  return h.digest('hex');
}

const HASHED = /^(\d+) values hashing to ([0-9a-f]{32})$/;

/** Compares rendered values with a record's expected lines. Returns null when they match, else a reason. */
export function compareResult(values: string[], rows: number, cols: number, expected: string[]): string | null {
  const exp = expected.filter((l) => l.length > 0 || expected.length === 1);
  if (exp.length === 1) {
    const m = HASHED.exec(exp[0].trim());
    if (m) {
      if (Number(m[1]) !== values.length) return `expected ${m[1]} values, got ${values.length}`;
      const h = md5Values(values);
      return h === m[2] ? null : `hash mismatch (${h})`;
    }
  }
  if (exp.length === values.length) {
    for (let i = 0; i < exp.length; i++) if (exp[i].trim() !== values[i].trim()) return `value ${i + 1}: expected ${JSON.stringify(exp[i])}, got ${JSON.stringify(values[i])}`;
    return null;
  }
  if (exp.length === rows && cols > 1) {
    // one row per line, values separated by spaces
    for (let r = 0; r < rows; r++) {
      const line = values.slice(r * cols, r * cols + cols).join(' ');
      if (exp[r].trim() !== line) return `row ${r + 1}: expected ${JSON.stringify(exp[r])}, got ${JSON.stringify(line)}`;
    }
    return null;
  }
  return `expected ${exp.length} values, got ${values.length}: ${JSON.stringify(values.slice(0, 8))}`;
}
