import { parseQuery } from './query-parser';

describe('parseQuery', () => {
  it('parses terms, phrases, modifiers and prefixes', () => {
    expect(parseQuery('heat +"boundary layer" -turbulent supers*')).toEqual([
      { occur: 'should', kind: 'term', text: 'heat' },
      { occur: 'must', kind: 'phrase', text: 'boundary layer' },
      { occur: 'must_not', kind: 'term', text: 'turbulent' },
      { occur: 'should', kind: 'prefix', text: 'supers' },
    ]);
    expect(parseQuery('-"a b" +x*')).toEqual([
      { occur: 'must_not', kind: 'phrase', text: 'a b' },
      { occur: 'must', kind: 'prefix', text: 'x' },
    ]);
  });

  it.each([
    ['', 'empty'],
    ['   ', 'empty'],
    ['"open phrase', 'unterminated'],
    ['""', 'empty phrase'],
    ['+ x', 'followed'],
    ['*', 'prefix'],
    ['a*b', 'only allowed at the end'],
    ['-only', 'only excluded'],
    ['++x', 'two modifiers'],
  ])('rejects %j (%s) with validation_failed', (q, words) => {
    expect(() => parseQuery(q)).toThrow(expect.objectContaining({ code: 'validation_failed', message: expect.stringContaining(words) }));
  });
});

describe('phrase slop', () => {
  it('reads "…"~n after a phrase only', () => {
    expect(parseQuery('"shock wave"~2 heat~3')).toEqual([
      { occur: 'should', kind: 'phrase', text: 'shock wave', slop: 2 },
      { occur: 'should', kind: 'term', text: 'heat~3' },
    ]);
    expect(parseQuery('+"a b"~0')).toEqual([{ occur: 'must', kind: 'phrase', text: 'a b' }]);
  });
});
