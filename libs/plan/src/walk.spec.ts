import { DbError } from '@mmdb/core';
import { children, NODE_KINDS, type PlanNode } from './node';
import { NODE_SPECS } from './specs';
import { forEachNode, subplans, transformPlan } from './walk';
import { validatePlan } from './validate';

const scanT: PlanNode = { op: 'scan', schema: 'app.t' };
const withSub: PlanNode = {
  op: 'filter',
  input: { op: 'scan', schema: 'app.a' },
  predicate: { kind: 'exists', plan: { op: 'filter', input: { op: 'scan', schema: 'app.b' }, predicate: { kind: 'in_subquery', arg: { kind: 'col', name: 'x' }, plan: scanT } } },
};

describe('closed node union', () => {
  it('has one spec per kind', () => {
    expect(Object.keys(NODE_SPECS).sort()).toEqual([...NODE_KINDS].sort());
  });

  it('transformPlan enters subquery plans inside expressions, at any depth', () => {
    const seen: string[] = [];
    const out = transformPlan(withSub, {
      node: (n) => {
        if (n.op === 'scan') { seen.push(n.schema); return { ...n, limit: 5 }; }
        return n;
      },
    });
    expect(seen.sort()).toEqual(['app.a', 'app.b', 'app.t']);
    const limits: (number | undefined)[] = [];
    forEachNode(out, (n) => { if (n.op === 'scan') limits.push(n.limit); });
    expect(limits).toEqual([5, 5, 5]);
    expect(withSub).not.toBe(out);
    expect((withSub as { input: { limit?: number } }).input.limit).toBeUndefined();
  });

  it('a transformer that changes nothing keeps the tree', () => {
    expect(transformPlan(withSub, { node: (n) => n, expr: (e) => e })).toBe(withSub);
    expect(subplans(withSub)).toHaveLength(1);
  });

  it('fuse and graph_expand children', () => {
    const f: PlanNode = { op: 'fuse', method: 'rrf', key: ['id'], inputs: [scanT, { op: 'vector_topk', schema: 'app.t', vector: { kind: 'param', index: 1 }, k: 3 }] };
    expect(children(f)).toHaveLength(2);
    expect(children({ op: 'graph_expand', schema: 's', rel: 'r', from: { kind: 'lit', value: 'a' } })).toEqual([]);
  });
});

describe('validation of the multi-model nodes', () => {
  const bad = (v: unknown) => { try { validatePlan(v); } catch (e) { return (e as DbError).details?.path; } return 'valid'; };
  it('accepts well-formed nodes', () => {
    expect(bad({ op: 'fts_search', schema: 'a.b', field: 'body', query: { bool: { must: [{ terms: ['x'] }], should: [{ phrase: 'a b', slop: 1 }], minimum_should_match: 1 } } })).toBe('valid');
    // nested bool at any depth, negative minimum_should_match (all but n), the query as $n, every match (limit null)
    expect(bad({ op: 'fts_search', schema: 'a.b', field: 'body', query: { bool: { should: [{ bool: { must: [{ prefix: 'ab' }], must_not: [{ terms: ['x'] }] } }, { terms: ['y'] }], minimum_should_match: -1 } }, limit: null })).toBe('valid');
    expect(bad({ op: 'fts_search', schema: 'a.b', field: 'body', query: { kind: 'param', index: 1 } })).toBe('valid');
    expect(bad({ op: 'vector_topk', schema: 'a.b', vector: { kind: 'lit', value: [1, 2] }, k: 3, metric: 'l2', filter: { kind: 'lit', value: 1 } })).toBe('valid');
    expect(bad({ op: 'graph_expand', input: scanT, schema: 'a.b', rel: 'r', from: { kind: 'col', name: 'id' }, max_depth: null, direction: 'both' })).toBe('valid');
    expect(bad({ op: 'window', input: scanT, functions: [{ name: 'rn', fn: 'row_number', args: [], partition: [], order: [], frame: { unit: 'groups', start: { type: 'preceding', offset: { kind: 'lit', value: 1 } }, end: { type: 'current_row' } } }] })).toBe('valid');
  });
  it('names the JSON path of the fault', () => {
    expect(bad({ op: 'fts_search', schema: 'a.b', query: { phrase: 'x', slop: -1 } })).toBe('$.query.slop');
    expect(bad({ op: 'fts_search', schema: 'a.b', field: 'f', query: { bool: { must: [{ bool: { must_not: [{ terms: ['x'] }] } }] } } })).toBe('$.query.bool.must[0].bool');
    expect(bad({ op: 'fts_search', schema: 'a.b', field: 'f', query: { bool: { should: [{ terms: ['x'] }], minimum_should_match: 1.5 } } })).toBe('$.query.bool.minimum_should_match');
    expect(bad({ op: 'fts_search', schema: 'a.b', field: 'f', query: { kind: 'nope' } })).toBe('$.query.kind');
    expect(bad({ op: 'vector_topk', schema: 'a.b', vector: { kind: 'lit', value: [1] }, k: 3, metric: 'hamming' })).toBe('$.metric');
    expect(bad({ op: 'fuse', method: 'rrf', key: ['id'], inputs: [] })).toBe('$.inputs');
    expect(bad({ op: 'fuse', method: 'rrf', key: ['id'], inputs: [{ op: 'vector_topk', schema: 'a.b', vector: { kind: 'lit', value: [1] }, k: 2.5 }] })).toBe('$.inputs[0].k');
    expect(bad({ op: 'filter', input: { op: 'fts_search', schema: 'a.b', field: 'f', query: 'x', limit: 0 }, predicate: { kind: 'lit', value: 1 } })).toBe('$.input.limit');
    expect(bad({ op: 'graph_expand', schema: 's', rel: 'r', from: { kind: 'lit', value: 'a' }, min_depth: 2, max_depth: 1 })).toBe('$.max_depth');
    expect(bad({ op: 'graph_expand', schema: 's', rel: 'r', from: { kind: 'col', name: 'id' }, direction: 'up' })).toBe('$.direction');
    expect(bad({ op: 'window', input: scanT, functions: [{ name: 'r', fn: 'rank', args: [], partition: [], order: [], frame: { unit: 'rows', start: { type: 'sideways' }, end: { type: 'current_row' } } }] })).toBe('$.functions[0].frame.start.type');
  });
});
