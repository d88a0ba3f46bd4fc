import { DbError } from '@mmdb/core';

export type TokKind = 'id' | 'qid' | 'str' | 'int' | 'real' | 'param' | 'qparam' | 'op' | 'blob' | 'eof';
export interface Token { readonly kind: TokKind; readonly text: string; readonly upper: string; readonly pos: number; end: number; readonly line: number; readonly col: number }

const OPS = ['<->', '<=>', '<#>', '<+>', '@@', '||', '<=', '>=', '==', '!=', '<>', '<<', '>>', '->>', '->', '(', ')', ',', ';', '.', '+', '-', '*', '/', '%', '<', '>', '=', '&', '|', '~'];

export function syntaxError(sql: string, pos: number, msg: string): never {
  const before = sql.slice(0, pos);
  const line = before.split('\n').length;
  const col = pos - before.lastIndexOf('\n');
  throw new DbError('validation_failed', `syntax error at line ${line}, column ${col}: ${msg}`, { line, column: col });
}

/** Splits SQL text into tokens (SQLite lexical rules: quoted identifiers, '' escapes, comments). */
export function tokenize(sql: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  let line = 1;
  let lineStart = 0;
  const n = sql.length;
  const push = (kind: TokKind, text: string, start: number) =>
    out.push({ kind, text, upper: kind === 'id' ? text.toUpperCase() : text, pos: start, end: -1, line, col: start - lineStart + 1 });
  while (i < n) {
    if (out.length && out[out.length - 1].end < 0) out[out.length - 1].end = i;
    const c = sql[i];
    if (c === '\n') { i++; line++; lineStart = i; continue; }
    if (c === ' ' || c === '\t' || c === '\r' || c === '\f') { i++; continue; }
    if (c === '-' && sql[i + 1] === '-') { while (i < n && sql[i] !== '\n') i++; continue; }
    if (c === '/' && sql[i + 1] === '*') {
      const e = sql.indexOf('*/', i + 2);
      const end = e < 0 ? n : e + 2;
      for (let k = i; k < end; k++) if (sql[k] === '\n') { line++; lineStart = k + 1; }
      i = end;
      continue;
    }
    const start = i;
    if (/[A-Za-z_\u0080-\uffff]/.test(c)) {
      if ((c === 'x' || c === 'X') && sql[i + 1] === "'") {
        const e = sql.indexOf("'", i + 2);
        if (e < 0) syntaxError(sql, i, 'unterminated blob literal');
        push('blob', sql.slice(i + 2, e), start);
        i = e + 1;
        continue;
      }
      while (i < n && /[A-Za-z0-9_$\u0080-\uffff]/.test(sql[i])) i++;
      push('id', sql.slice(start, i), start);
      continue;
    }
    if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(sql[i + 1] ?? ''))) {
      if (c === '0' && (sql[i + 1] === 'x' || sql[i + 1] === 'X')) {
        i += 2;
        while (i < n && /[0-9a-fA-F]/.test(sql[i])) i++;
        push('int', sql.slice(start, i), start);
        continue;
      }
      let real = false;
      while (i < n && /[0-9]/.test(sql[i])) i++;
      if (sql[i] === '.') { real = true; i++; while (i < n && /[0-9]/.test(sql[i])) i++; }
      if ((sql[i] === 'e' || sql[i] === 'E') && /[0-9]/.test(sql[i + 1] === '+' || sql[i + 1] === '-' ? sql[i + 2] ?? '' : sql[i + 1] ?? '')) {
        real = true;
        i += sql[i + 1] === '+' || sql[i + 1] === '-' ? 2 : 1;
        while (i < n && /[0-9]/.test(sql[i])) i++;
      }
      if (i < n && /[A-Za-z_]/.test(sql[i])) syntaxError(sql, start, `unrecognized token "${sql.slice(start, i + 1)}"`);
      push(real ? 'real' : 'int', sql.slice(start, i), start);
      continue;
    }
    if (c === "'") {
      let s = '';
      i++;
      for (;;) {
        if (i >= n) syntaxError(sql, start, 'unterminated string literal');
        if (sql[i] === "'") {
          if (sql[i + 1] === "'") { s += "'"; i += 2; continue; }
          i++;
          break;
        }
        if (sql[i] === '\n') { line++; lineStart = i + 1; }
        s += sql[i++];
      }
      push('str', s, start);
      continue;
    }
    if (c === '"' || c === '`' || c === '[') {
      const close = c === '[' ? ']' : c;
      let s = '';
      i++;
      for (;;) {
        if (i >= n) syntaxError(sql, start, 'unterminated quoted identifier');
        if (sql[i] === close) {
          if (close !== ']' && sql[i + 1] === close) { s += close; i += 2; continue; }
          i++;
          break;
        }
        s += sql[i++];
      }
      push('qid', s, start);
      continue;
    }
    // `@@` is the full-text match operator; `@name` a (refused) named parameter
    if (c === '$' || c === '?' || c === ':' || (c === '@' && sql[i + 1] !== '@')) {
      i++;
      while (i < n && /[A-Za-z0-9_]/.test(sql[i])) i++;
      push(c === '?' ? 'qparam' : 'param', sql.slice(start, i), start);
      continue;
    }
    const op = OPS.find((o) => sql.startsWith(o, i));
    if (!op) syntaxError(sql, i, `unrecognized token "${c}"`);
    i += op.length;
    push('op', op, start);
  }
  if (out.length && out[out.length - 1].end < 0) out[out.length - 1].end = n;
  out.push({ kind: 'eof', text: '', upper: '', pos: n, end: n, line, col: n - lineStart + 1 });
  return out;
}
