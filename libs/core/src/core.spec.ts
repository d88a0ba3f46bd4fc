import { readFileSync } from 'fs';
import { join } from 'path';
import { DbError, ERROR_CATALOGUE, coerceValue, decodeLsn, encodeLsn, isUlid, isUuid, newUlid } from './index';

describe('error catalogue', () => {
  it('has every code of spec §7.1 with its HTTP status', () => {
    const spec = readFileSync(join(__dirname, '../../../../shared/spec/API.md'), 'utf8');
    const table = spec.slice(spec.indexOf('### 7.1'), spec.indexOf('### 7.2'));
    const rows = [...table.matchAll(/^\| (\d{3}) \| ([a-z_]+) \|/gm)].map((m) => [Number(m[1]), m[2]] as const);
    expect(rows.length).toBeGreaterThan(20);
    for (const [status, code] of rows) {
      expect(ERROR_CATALOGUE).toHaveProperty(code);
      expect(ERROR_CATALOGUE[code as keyof typeof ERROR_CATALOGUE].status).toBe(status);
    }
  });

  it('advises retry exactly for 429 and the 5xx codes (spec §7.3)', () => {
    for (const [code, e] of Object.entries(ERROR_CATALOGUE)) {
      if (code === 'corrupt_log') continue; // a corrupt log does not heal by retrying
      expect([code, e.retry]).toEqual([code, e.status === 429 || e.status >= 500]);
    }
  });

  it('carries status, retry and details on DbError', () => {
    const e = new DbError('write_conflict', 'x', { current_version: 3 });
    expect([e.status, e.retry, e.details.current_version]).toEqual([409, false, 3]);
  });
});

describe('ids', () => {
  it('makes sortable ULIDs and recognises ULIDs and UUIDs', () => {
    const a = newUlid();
    const b = newUlid();
    expect(isUlid(a)).toBe(true);
    expect(a < b).toBe(true);
    expect(isUlid('not-a-ulid')).toBe(false);
    expect(isUuid('123e4567-e89b-12d3-a456-426614174000')).toBe(true);
    expect(isUuid(a)).toBe(false);
  });

  it('draws fresh random bits for each millisecond, across refills of the random pool', () => {
    // 16 random characters per id: 2,000 ids read the 4 KiB pool several times over
    const ids = Array.from({ length: 2000 }, (_, i) => newUlid(2_000_000_000_000 + i));
    expect(ids.every(isUlid)).toBe(true);
    expect([...ids].sort()).toEqual(ids);
    const randoms = ids.map((x) => x.slice(10));
    expect(new Set(randoms).size).toBe(ids.length);
    // every symbol of the alphabet shows up at every random position (a stuck or biased source would not)
    for (let pos = 0; pos < 16; pos++) expect(new Set(randoms.map((r) => r[pos])).size).toBe(32);
  });

  it('encodes LSNs as big-endian u64 that sort bytewise', () => {
    expect(decodeLsn(encodeLsn(2 ** 40 + 7))).toBe(2 ** 40 + 7);
    expect(Buffer.compare(encodeLsn(255), encodeLsn(256))).toBeLessThan(0);
  });
});

describe('value codecs', () => {
  const mismatch = (f: () => unknown) => {
    try {
      f();
      return 'ok';
    } catch (e) {
      return (e as DbError).code;
    }
  };

  it('accepts values of each type and refuses the rest with type_mismatch naming the field', () => {
    expect(coerceValue('a', 'str', 'x')).toBe('x');
    expect(coerceValue('a', 'i64', -5)).toBe(-5);
    expect(coerceValue('a', 'f64', 1.5)).toBe(1.5);
    expect(coerceValue('a', 'bool', false)).toBe(false);
    expect(coerceValue('a', 'timestamp', '1970-01-01T00:00:01.500Z')).toBe(1500);
    expect(coerceValue('a', 'json', { x: [1] })).toEqual({ x: [1] });
    expect(coerceValue('a', 'vector', [1, 2], 2)).toEqual([1, 2]);
    expect(mismatch(() => coerceValue('a', 'str', 1))).toBe('type_mismatch');
    expect(mismatch(() => coerceValue('a', 'i64', 2 ** 53))).toBe('type_mismatch');
    expect(mismatch(() => coerceValue('a', 'i64', '5'))).toBe('type_mismatch');
    expect(mismatch(() => coerceValue('a', 'f64', Infinity))).toBe('type_mismatch');
    expect(mismatch(() => coerceValue('a', 'bool', 0))).toBe('type_mismatch');
    expect(mismatch(() => coerceValue('a', 'timestamp', 'yesterday'))).toBe('type_mismatch');
    expect(mismatch(() => coerceValue('a', 'vector', [1, 'x']))).toBe('type_mismatch');
    expect(mismatch(() => coerceValue('a', 'vector', [1, 2, 3], 2))).toBe('dim_mismatch');
    try {
      coerceValue('age', 'i64', 'x');
    } catch (e) {
      expect((e as DbError).message).toContain('"age"');
      expect((e as DbError).details.field).toBe('age');
    }
  });
});
