import { DbError } from '@mmdb/core';
import { parseSql } from './parser';

function err(sql: string): DbError {
  try { parseSql(sql); } catch (e) { return e as DbError; }
  throw new Error('expected an error');
}

describe('parser', () => {
  it('parses sqllogictest syntax (b-2, AVG(DISTINCT x), SELECT ALL)', () => {
    const [s] = parseSql('SELECT ALL b-2, AVG(DISTINCT x) FROM t1 WHERE NOT a IN (1,2) ORDER BY 1 DESC LIMIT 2 OFFSET 1');
    expect(s.kind).toBe('select');
  });
  it('reports line and column of a syntax error', () => {
    const e = err('SELECT a\nFROM t WHERE (');
    expect(e.code).toBe('validation_failed');
    expect(e.details).toMatchObject({ line: 2 });
    expect(e.message).toMatch(/line 2, column \d+/);
  });
  it('refuses constructs we do not run with unsupported_sql naming them', () => {
    expect(err('SELECT * FROM a NATURAL JOIN b').code).toBe('unsupported_sql');
    expect(err('SELECT * FROM a WHERE x = ?').code).toBe('unsupported_sql');
    expect(err("SELECT * FROM t WHERE a REGEXP 'x'").code).toBe('unsupported_sql');
    expect(err('CREATE TRIGGER t1r1 UPDATE ON t1 BEGIN SELECT 1; END').details).toMatchObject({ construct: 'CREATE TRIGGER' });
  });
  it('parses scripts with transactions and $n parameters', () => {
    const st = parseSql('BEGIN; INSERT INTO t VALUES($1, $2) RETURNING *; COMMIT;');
    expect(st.map((s) => s.kind)).toEqual(['begin', 'insert', 'commit']);
  });
});
