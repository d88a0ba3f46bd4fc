import { Doc, type IndexView } from './doc';
import { flatten, type JsonObject } from './mapping';
import { compile } from './query';
import { EsError } from './errors';

function view(sources: JsonObject[]): IndexView {
  const mappings = { properties: { t: { type: 'text' }, k: { type: 'keyword' }, u: { type: 'text' } } };
  const v: IndexView = { name: 'test', uuid: 'u', fields: flatten(mappings), settings: {}, mappings, docs: [], stats: new Map() };
  (v as { docs: Doc[] }).docs = sources.map((s, i) => new Doc({ _id: String(i + 1), _source: s, _version: 1, _seq_no: i, _primary_term: 1 }, v));
  return v;
}

describe('span queries (Lucene spans over a text field)', () => {
  const v = view([
    { t: 'the quick brown fox jumps over the lazy dog' }, // 1
    { t: 'quick fox and brown dog' }, // 2
    { t: 'a fox quick as lightning' }, // 3
    { t: 'some short words with a stupendously long one' }, // 4
  ]);
  const ids = (q: JsonObject) => { const s = compile({ ix: v }, q); return v.docs.filter((d) => s(d) !== null).map((d) => d.id); };
  const st = (w: string) => ({ span_term: { t: w } });

  it('span_term matches (and scores) as a term query', () => {
    expect(ids(st('fox'))).toEqual(['1', '2', '3']);
    const a = compile({ ix: v }, st('brown')), b = compile({ ix: v }, { term: { t: 'brown' } });
    expect(v.docs.map((d) => a(d))).toEqual(v.docs.map((d) => b(d)));
  });

  it('span_near: in order within slop, or any order', () => {
    expect(ids({ span_near: { clauses: [st('quick'), st('fox')], slop: 0 } })).toEqual(['2']);
    expect(ids({ span_near: { clauses: [st('quick'), st('fox')], slop: 1 } })).toEqual(['1', '2']);
    expect(ids({ span_near: { clauses: [st('quick'), st('fox')], slop: 0, in_order: false } })).toEqual(['2', '3']);
    expect(ids({ span_near: { clauses: [st('short'), { span_multi: { match: { prefix: { t: 'word' } } } }] } })).toEqual(['4']);
  });

  it('span_or, span_not (pre/post), span_first, span_containing, span_within', () => {
    expect(ids({ span_or: { clauses: [st('lightning'), st('lazy')] } })).toEqual(['1', '3']);
    // fox not right after quick
    expect(ids({ span_not: { include: st('fox'), exclude: st('quick'), pre: 1 } })).toEqual(['1', '3']);
    expect(ids({ span_not: { include: st('fox'), exclude: st('quick'), dist: 1 } })).toEqual(['1']);
    expect(ids({ span_first: { match: st('fox'), end: 2 } })).toEqual(['2', '3']);
    const big = { span_near: { clauses: [st('quick'), st('dog')], slop: 10 } };
    expect(ids({ span_containing: { big, little: st('brown') } })).toEqual(['1', '2']);
    expect(ids({ span_within: { big, little: st('over') } })).toEqual(['1']);
    expect(ids({ span_multi: { match: { wildcard: { t: 'l*g' } } } })).toEqual(['3', '4']);
  });

  it('refuses clauses over different fields and a span_multi of another query', () => {
    expect(() => compile({ ix: v }, { span_near: { clauses: [st('fox'), { span_term: { u: 'fox' } }] } })).toThrow(EsError);
    expect(() => compile({ ix: v }, { span_multi: { match: { match: { t: 'fox' } } } })).toThrow(/multi term query/);
  });
});

describe('sloppy phrases as Lucene matches them (the spread of the terms, not the sum of their distances)', () => {
  const v = view([{ t: 'a x b x c' }, { t: 'c b a' }, { t: 'a b c' }, { t: 'b a' }]);
  const ids = (query: string, slop: number) => { const s = compile({ ix: v }, { match_phrase: { t: { query, slop } } }); return v.docs.filter((d) => s(d) !== null).map((d) => d.id); };

  it('three words within slop when their offsets span at most slop positions', () => {
    expect(ids('a b c', 2)).toEqual(['1', '3']);
    expect(ids('a b c', 1)).toEqual(['3']);
    // reversed: c b a against a b c spans 4
    expect(ids('a b c', 4)).toEqual(['1', '2', '3']);
    expect(ids('b a', 1)).toEqual(['2', '4']);
    expect(ids('a b', 2)).toEqual(['1', '2', '3', '4']);
  });

  it('scores the sloppy frequency 1/(1 + length): an exact occurrence scores as the exact phrase', () => {
    const exact = compile({ ix: v }, { match_phrase: { t: 'a b c' } })(v.docs[2]);
    const sloppy = compile({ ix: v }, { match_phrase: { t: { query: 'a b c', slop: 3 } } })(v.docs[2]);
    expect(sloppy).toBe(exact);
    expect(compile({ ix: v }, { match_phrase: { t: { query: 'a b c', slop: 3 } } })(v.docs[0])!).toBeLessThan(sloppy!);
  });
});
