import { parseManifest } from '@mmdb/storage';
import { DbError } from '@mmdb/core';
import { formatPk, lastRawSegment, parsePkSegment } from './pk';

/** A manifest `t.<table>` whose columns are the primary key, in order. */
function keyed(table: string, columns: Array<[string, string]>) {
  const cols = columns.map(([name, ty]) => `[[columns]]\nname = "${name}"\nty = "${ty}"\nrequired = true\n`).join('');
  return parseManifest(`namespace = "t"\ntable = "${table}"\nprimary_key = ${JSON.stringify(columns.map(([n]) => n))}\n${cols}`);
}

const one = keyed('one', [['id', 'i64']]);
const text = keyed('text', [['k', 'str']]);
const two = keyed('two', [
  ['a', 'str'],
  ['b', 'i64'],
]);

describe('the {pk} path segment', () => {
  it('reads one-column keys plain, percent-encoded, and as a JSON array', () => {
    expect(parsePkSegment('42', one)).toEqual([42]);
    expect(parsePkSegment('-7', one)).toEqual([-7]);
    expect(parsePkSegment('%5B42%5D', one)).toEqual([42]);
    expect(parsePkSegment('[42]', one)).toEqual([42]);
    expect(parsePkSegment('ann%40x.io', text)).toEqual(['ann@x.io']);
    expect(parsePkSegment('a,b', text)).toEqual(['a,b']);
  });

  it('reads composite keys joined by commas or as a JSON array', () => {
    expect(parsePkSegment('x%2Cy,3', two)).toEqual(['x,y', 3]);
    expect(parsePkSegment('%5B%22x%22%2C3%5D', two)).toEqual(['x', 3]);
    expect(formatPk(['x,y', 3])).toBe('x%2Cy,3');
    expect(parsePkSegment(formatPk(['x,y', 3]), two)).toEqual(['x,y', 3]);
  });

  it('refuses a key of the wrong type, arity or encoding, naming the problem', () => {
    const bad = (raw: string, m = one) => {
      try {
        parsePkSegment(raw, m);
      } catch (e) {
        expect(e).toBeInstanceOf(DbError);
        return (e as DbError).message;
      }
      throw new Error(`accepted ${raw}`);
    };
    expect(bad('abc')).toMatch(/"id" expects i64/);
    expect(bad('1.5')).toMatch(/expects i64/);
    // i64 holds the signed 64-bit range (a bigint beyond ±2^53); beyond it is refused, quoted as sent
    expect(parsePkSegment('9007199254740993', one)).toEqual([9007199254740993n]);
    expect(parsePkSegment('-9223372036854775808', one)).toEqual([-9223372036854775808n]);
    expect(bad('9223372036854775808')).toMatch(/expects i64 .*9223372036854775808/);
    expect(bad('%E0%A4%A')).toMatch(/percent-encoding/);
    expect(bad('x', two)).toMatch(/2 component/);
    expect(bad('[1,2]')).toMatch(/1 component/);
  });

  it('takes the last raw segment of a URL, before any query string', () => {
    expect(lastRawSegment('/v1/tenants/T/rows/s.t/a%2Fb')).toBe('a%2Fb');
    expect(lastRawSegment('/v1/tenants/T/rows/s.t/42?x=/y')).toBe('42');
    expect(lastRawSegment('/rows/s.t/')).toBe('');
  });
});
