import type { TableManifest } from '@mmdb/core';
import { nodeOf, nodeOfValue, tupleOfNode } from './node';

const manifest = (pk: Array<[string, string]>): TableManifest =>
  ({
    namespace: 'n',
    table: 't',
    id: 'n.t',
    primary_key: pk.map(([n]) => n),
    columns: pk.map(([name, ty]) => ({ name, ty, required: true })),
    indexes: [],
    foreign_keys: [],
    checks: [],
    fulltext: [],
    relations: [],
  }) as unknown as TableManifest;

describe('node strings', () => {
  it('round-trips single and composite keys through their node string', () => {
    expect(nodeOf(['alice'])).toBe('alice');
    expect(nodeOf([42])).toBe('42');
    expect(nodeOf(['eu', 7])).toBe('["eu",7]');
    expect(tupleOfNode('42', manifest([['id', 'i64']]))).toEqual([42]);
    expect(tupleOfNode('alice', manifest([['id', 'str']]))).toEqual(['alice']);
    expect(tupleOfNode('["eu",7]', manifest([['r', 'str'], ['n', 'i64']]))).toEqual(['eu', 7]);
    expect(nodeOfValue(null)).toBeUndefined();
    expect(nodeOfValue(3.5)).toBe('3.5');
  });

  it('refuses a node text that cannot be a key of the table', () => {
    expect(() => tupleOfNode('abc', manifest([['id', 'i64']]))).toThrow(/numeric key/);
    expect(() => tupleOfNode('x', manifest([['a', 'str'], ['b', 'str']]))).toThrow(/JSON array/);
  });
});
