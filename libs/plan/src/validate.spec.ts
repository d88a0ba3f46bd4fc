import { validatePlan } from './validate';
import { visit, NODE_KINDS, type PlanVisitor } from './node';
import { scan } from './nodes/scan';

describe('plan validation', () => {
  it('accepts the spec scan node', () => {
    expect(validatePlan({ op: 'scan', schema: 'app.users' })).toEqual(scan('app.users'));
  });
  it('names the JSON path of a fault', () => {
    expect(() => validatePlan({ op: 'filter', input: { op: 'scan' }, predicate: { kind: 'lit', value: 1 } })).toThrow(/\$\.input\.schema/);
    expect(() => validatePlan({ op: 'join', kind: 'sideways', left: { op: 'scan', schema: 'a.b' }, right: { op: 'scan', schema: 'a.c' } })).toThrow(/\$\.kind/);
    expect(() => validatePlan({ op: 'nope' })).toThrow(/unknown node "nope"/);
    expect(() => validatePlan({ op: 'project', input: { op: 'scan', schema: 'a.b' }, columns: [{ name: 'x', expr: { kind: 'bogus' } }] })).toThrow(/\$\.columns\[0\]\.expr\.kind/);
  });
  it('checks collations on COLLATE expressions and columns', () => {
    const pred = { kind: 'binary', op: '=', left: { kind: 'col', name: 'n', collation: 'nocase' }, right: { kind: 'collate', arg: { kind: 'lit', value: 'A' }, collation: 'rtrim' } };
    expect(() => validatePlan({ op: 'filter', input: { op: 'scan', schema: 'a.b' }, predicate: pred })).not.toThrow();
    expect(() => validatePlan({ op: 'filter', input: { op: 'scan', schema: 'a.b' }, predicate: { ...pred, right: { kind: 'collate', arg: { kind: 'lit', value: 'A' }, collation: 'klingon' } } })).toThrow(/\$\.predicate\.right\.collation/);
    expect(() => validatePlan({ op: 'filter', input: { op: 'scan', schema: 'a.b' }, predicate: { ...pred, left: { kind: 'col', name: 'n', collation: 'x' } } })).toThrow(/\$\.predicate\.left\.collation/);
  });
  it('visitors handle every kind', () => {
    const v = Object.fromEntries(NODE_KINDS.map((k) => [k, () => k])) as unknown as PlanVisitor<string>;
    expect(visit(scan('a.b'), v, undefined)).toBe('scan');
  });
});
