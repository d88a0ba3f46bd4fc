import type { TableManifest } from '@mmdb/core';
import { decodeKey } from '@mmdb/storage';
import { decodeEdgeEnds, edgesOfRow, edgeWrites, forwardKey, relationRange } from './edges';

const m = (pk: string[], cols: Array<[string, string]>): TableManifest =>
  ({ id: 'n.t', namespace: 'n', table: 't', primary_key: pk, columns: cols.map(([name, ty]) => ({ name, ty, required: false })), relations: [] }) as unknown as TableManifest;

describe('edges of a row', () => {
  it('column form: array of keys, deduplicated, weight and numeric props', () => {
    const man = m(['id'], [['id', 'i64'], ['to', 'json'], ['w', 'f64'], ['cost', 'i64']]);
    const rel = { name: 'r', source: 'n.t', target: 'n.t', columns: ['to'], weight: 'w' };
    const es = edgesOfRow(rel, man, [1], { id: 1, to: [2, 3, 2, null], w: 0.5, cost: 7 });
    expect(es).toEqual([
      { src: '1', dst: '2', owner: null, weight: 0.5, props: { cost: 7 } },
      { src: '1', dst: '3', owner: null, weight: 0.5, props: { cost: 7 } },
    ]);
    expect(edgesOfRow(rel, man, [1], { id: 1, to: null })).toEqual([]);
  });

  it('edge-table form: owner only when the key is not the two ends; composite target keys', () => {
    const man = m(['code'], [['code', 'str'], ['a', 'str'], ['b1', 'str'], ['b2', 'i64']]);
    const rel = { name: 'r', source: 'n.s', source_columns: ['a'], target: 'n.x', columns: ['b1', 'b2'] };
    expect(edgesOfRow(rel, man, ['F1'], { code: 'F1', a: 'LHR', b1: 'eu', b2: 7 })).toEqual([{ src: 'LHR', dst: '["eu",7]', owner: 'F1' }]);
    const keyed = m(['a', 'b'], [['a', 'str'], ['b', 'str']]);
    const rel2 = { name: 'r', source: 'n.s', source_columns: ['a'], target: 'n.s', columns: ['b'] };
    expect(edgesOfRow(rel2, keyed, ['x', 'y'], { a: 'x', b: 'y' })).toEqual([{ src: 'x', dst: 'y', owner: null }]);
  });

  it('the diff writes only what changed, forward and reverse', () => {
    const e = (dst: string, weight?: number) => ({ src: 'a', dst, owner: null, ...(weight !== undefined ? { weight } : {}) });
    const ws = edgeWrites('n.t', 'r', [e('b'), e('c', 1)], [e('c', 1), e('d')]);
    expect(ws.map((w) => [decodeKey(w.key).slice(2).join(' '), w.value === null ? 'del' : 'put'])).toEqual([
      ['f a b ', 'del'],
      ['r b a ', 'del'],
      ['f a d ', 'put'],
      ['r d a ', 'put'],
    ]);
  });

  it('decodeEdgeEnds matches the general decoder, including escaped NUL and owners', () => {
    const { gte } = relationRange('n.t', 'r', 'f');
    for (const e of [
      { src: 'a', dst: 'b', owner: null },
      { src: 'é€', dst: '["eu",7]', owner: 'F1' },
      { src: 'x\u0000y', dst: 'z', owner: null },
    ]) {
      expect(decodeEdgeEnds(forwardKey('n.t', 'r', e), gte.length)).toEqual([e.src, e.dst, e.owner]);
    }
  });
});
