import { Doc, type IndexView } from './doc';
import { applyDynamic, coerceNumber, flatten, validateMappings, type JsonObject } from './mapping';
import { parseJsonExact } from '@mmdb/core';
import { asDoubles, refuseInexact } from './numbers';
import { serialize } from './serialize';
import { compile } from './query';
import { parseQueryString } from './query-string';
import { formatDate, parseDate, parseDateMath } from './dates';
import { quantizedLength } from './scoring';
import { applyFilterPath } from './filter-path';
import { partitionOf } from './agg-buckets';
import { runAggs, type AggCtx } from './aggs';
import { filterSource, sourceSpec } from './source-filter';
import { bigToIp, cidr, ipToBig } from './ip';
import { EsError } from './errors';
import { prepareSearch } from './search';

function view(mappings: JsonObject, sources: JsonObject[]): IndexView {
  const v: IndexView = { name: 'test', uuid: 'u', fields: flatten(mappings), settings: {}, mappings, docs: [], stats: new Map() };
  (v as { docs: Doc[] }).docs = sources.map((s, i) => new Doc({ _id: String(i + 1), _source: s, _version: 1, _seq_no: i, _primary_term: 1 }, v));
  return v;
}

describe('mappings', () => {
  it('dynamic mapping as Elasticsearch: text + keyword sub-field, long, float, boolean, date detection, objects', () => {
    const m = applyDynamic({}, { s: 'hello', n: 3, f: 1.5, b: true, d: '2020-01-02', o: { x: 'y' } })!;
    expect(m.properties).toEqual({
      s: { type: 'text', fields: { keyword: { type: 'keyword', ignore_above: 256 } } },
      n: { type: 'long' }, f: { type: 'float' }, b: { type: 'boolean' }, d: { type: 'date' },
      o: { properties: { x: { type: 'text', fields: { keyword: { type: 'keyword', ignore_above: 256 } } } } },
    });
  });
  it('strict refuses a new field; false ignores it', () => {
    expect(() => applyDynamic({ dynamic: 'strict', properties: {} }, { a: 1 })).toThrow(/mapping set to strict, dynamic introduction of \[a\] within \[_doc\] is not allowed/);
    expect(applyDynamic({ dynamic: 'false', properties: {} }, { a: 1 })).toBeNull();
  });
  it('nested and unknown types are mapper_parsing_exception naming the type', () => {
    for (const type of ['nested', 'foo']) {
      try {
        validateMappings({ properties: { x: { type } } });
        fail('accepted');
      } catch (e) {
        expect((e as EsError).type).toBe('mapper_parsing_exception');
        expect((e as EsError).reason).toContain(`[${type}]`);
      }
    }
  });
});

describe('BM25 as Elasticsearch 7 scores it', () => {
  it('matches the score Elasticsearch gives a one-term match (idf·2.2·tf/(tf+k1·norm))', () => {
    const v = view({ properties: { t: { type: 'text' } } }, [{ t: 'quick brown fox' }, { t: 'quick quick dog' }, { t: 'lazy cat' }]);
    const s = compile({ ix: v }, { match: { t: 'quick' } });
    const idf = Math.log(1 + (3 - 2 + 0.5) / (2 + 0.5));
    const avgdl = 8 / 3;
    const expect1 = idf * 2.2 * (1 / (1 + 1.2 * (0.25 + (0.75 * 3) / avgdl)));
    expect(s(v.docs[0])).toBeCloseTo(expect1, 5);
    expect(s(v.docs[1])!).toBeGreaterThan(s(v.docs[0])!);
    expect(s(v.docs[2])).toBeNull();
  });
  it('quantizes long field lengths as Lucene norms do (exact below 24)', () => {
    expect(quantizedLength(23)).toBe(23);
    expect(quantizedLength(100)).toBe(96);
  });
});

describe('search paging', () => {
  it('a relevance page selected without sorting every hit equals the fully sorted page', () => {
    const words = ['a', 'b', 'c', 'd'];
    const v = view({ properties: { t: { type: 'text' } } }, Array.from({ length: 60 }, (_, i) => ({ t: Array.from({ length: 1 + (i % 5) }, (_, k) => words[(i + k) % 4]).join(' ') })));
    const env = { maxBuckets: 100, maxResultWindow: 10000 };
    for (const [from, size] of [[0, 10], [7, 5], [50, 20]]) {
      const plain = prepareSearch([v], { query: { match: { t: 'a b' } }, from, size }, {}, env);
      const sorted = prepareSearch([v], { query: { match: { t: 'a b' } }, from, size, sort: ['_score'] }, {}, env);
      expect(plain.total).toBe(sorted.total);
      expect(plain.hits.slice(from, from + size).map((h) => h.doc.id)).toEqual(sorted.hits.slice(from, from + size).map((h) => h.doc.id));
    }
  });
  it('refuses the search types the REST layer refuses, and an indices_boost naming no index unless ignore_unavailable', () => {
    const v = view({ properties: { t: { type: 'text' } } }, [{ t: 'a' }]);
    const env = { maxBuckets: 100, maxResultWindow: 10000 };
    expect(() => prepareSearch([v], {}, { search_type: 'query_and_fetch' }, env)).toThrow('Unsupported search type [query_and_fetch]');
    expect(() => prepareSearch([v], {}, { search_type: 'scan' }, env)).toThrow('No search type for [scan]');
    expect(prepareSearch([v], {}, { search_type: 'dfs_query_then_fetch' }, env).total).toBe(1);
    expect(() => prepareSearch([v], { indices_boost: [{ nope: 2 }, { test: 1 }] }, {}, env)).toThrow('no such index [nope]');
    expect(prepareSearch([v], { indices_boost: [{ nope: 2 }, { 'te*': 1 }] }, { ignore_unavailable: 'true' }, env).total).toBe(1);
  });
  it('skips the shards whose field ranges cannot match (pre_filter_shard_size), and aggregates on _index', () => {
    const mk = (name: string, date: string): IndexView => ({ ...view({ properties: { at: { type: 'date' } } }, [{ at: date }]), name });
    const views = [mk('i1', '2016-01-01'), mk('i2', '2017-01-01'), mk('i3', '2018-01-01')];
    (views as Array<{ docs: Doc[] }>).forEach((v, i) => v.docs.forEach((d) => ((d as unknown as { index: IndexView }).index = views[i])));
    const env = { maxBuckets: 100, maxResultWindow: 10000 };
    const range = (gte: string, lt: string) => ({ size: 0, query: { range: { at: { gte, lt } } } });
    expect(prepareSearch(views, range('2016-02-01', '2018-02-01'), { pre_filter_shard_size: '1' }, env).skipped).toBe(1);
    expect(prepareSearch(views, range('2016-02-01', '2018-02-01'), {}, env).skipped).toBe(0);
    expect(prepareSearch(views, range('2019-01-01', '2020-01-01'), { pre_filter_shard_size: '1' }, env).skipped).toBe(2); // one still runs
    expect(prepareSearch(views, { ...range('2016-02-01', '2018-02-01'), aggs: { g: { global: {} } } }, { pre_filter_shard_size: '1' }, env).skipped).toBe(0);
    const byIndex = prepareSearch(views, { ...range('2016-02-01', '2018-02-01'), aggs: { ix: { terms: { field: '_index', min_doc_count: 0 } } } }, {}, env).aggregations as JsonObject;
    expect((byIndex.ix as JsonObject).buckets).toEqual([{ key: 'i2', doc_count: 1 }, { key: 'i3', doc_count: 1 }, { key: 'i1', doc_count: 0 }]);
    expect(() => prepareSearch(views, {}, { pre_filter_shard_size: '0' }, env)).toThrow('preFilterShardSize must be >= 1');
  });
});

describe('query_string', () => {
  it('follows Lucene occur rules with AND/OR/NOT, fields, phrases, ranges and wildcards', () => {
    expect(parseQueryString({ query: 'a AND b' }, ['f'])).toEqual({ bool: { must: [{ match: { f: { query: 'a', operator: 'or', lenient: false } } }, { match: { f: { query: 'b', operator: 'or', lenient: false } } }] } });
    const q = parseQueryString({ query: 'title:"x y"~2 -year:[2000 TO *] name:ab*' }, ['f']);
    expect(q).toEqual({ bool: {
      should: [{ match_phrase: { title: { query: 'x y', slop: 2 } } }, { wildcard: { name: { value: 'ab*', case_insensitive: true } } }],
      must_not: [{ range: { year: { gte: '2000' } } }],
    } });
  });
  it("multiplies the score by the query's own boost (query_string and simple_query_string)", () => {
    const v = view({ properties: { t: { type: 'text' } } }, [{ t: 'some short words' }, { t: 'other' }]);
    for (const kind of ['query_string', 'simple_query_string']) {
      expect(compile({ ix: v }, { [kind]: { default_field: 't', query: 'shor*', boost: 2 } })(v.docs[0])).toBe(2);
      expect(compile({ ix: v }, { [kind]: { default_field: 't', query: 'shor*' } })(v.docs[0])).toBe(1);
    }
  });
});

describe('dates', () => {
  it('parses named formats, custom patterns and date math with rounding', () => {
    expect(parseDate('2020-01-02T03:04:05Z')).toBe(Date.UTC(2020, 0, 2, 3, 4, 5));
    expect(parseDate('1577934245000')).toBe(1577934245000);
    expect(parseDate('02/01/2020', 'dd/MM/yyyy')).toBe(Date.UTC(2020, 0, 2));
    expect(parseDateMath('2020-01-15||/M', undefined, undefined, false)).toBe(Date.UTC(2020, 0, 1));
    expect(parseDateMath('2020-01-15||/M', undefined, undefined, true)).toBe(Date.UTC(2020, 1, 1) - 1);
    expect(formatDate(Date.UTC(2016, 4, 3))).toBe('2016-05-03T00:00:00.000Z');
    // month names of the mapping's locale, java-time "8" prefix
    expect(parseDate('Mi, 06 Dez 2000 02:55:00 -0800', '8E, d MMM uuuu HH:mm:ss Z', undefined, 'de')).toBe(Date.UTC(2000, 11, 6, 10, 55));
    expect(parseDate('06 mars 2000', 'dd MMM yyyy', undefined, 'fr')).toBe(Date.UTC(2000, 2, 6));
    expect(formatDate(Date.UTC(2016, 4, 3), 'yyyy-MM-dd', '+02:00')).toBe('2016-05-03');
  });
});

describe('aggregations', () => {
  const v = view({ properties: { g: { type: 'keyword' }, n: { type: 'long' } } }, [{ g: 'a', n: 1 }, { g: 'a', n: 51 }, { g: 'b', n: 101 }, { g: 'c', n: 151 }]);
  const ctx = (): AggCtx => ({ ixs: [v], allDocs: v.docs, typedKeys: false, maxBuckets: 100, buckets: 0, filter: (q) => { const s = compile({ ix: v }, q); return (d) => s(d) !== null; }, topHits: () => ({}), score: () => 1 });
  it('terms with sub-aggregations, percentiles (t-digest) and a sibling pipeline', () => {
    const r = runAggs({
      g: { terms: { field: 'g', size: 2 }, aggs: { s: { sum: { field: 'n' } } } },
      p: { percentiles: { field: 'n', percents: [25, 50, 95] } },
      best: { max_bucket: { buckets_path: 'g>s' } },
    }, v.docs, ctx());
    expect(r.g).toEqual({ doc_count_error_upper_bound: 0, sum_other_doc_count: 1, buckets: [{ key: 'a', doc_count: 2, s: { value: 52 } }, { key: 'b', doc_count: 1, s: { value: 101 } }] });
    expect(r.p).toEqual({ values: { '25.0': 26, '50.0': 76, '95.0': 151 } });
    expect(r.best).toEqual({ value: 101, keys: ['b'] });
  });
  it('partitions terms as Elasticsearch does (values from its REST tests)', () => {
    expect([partitionOf('abc', 2), partitionOf('bcd', 2)]).toEqual([1, 0]);
    expect([partitionOf(1234, 2), partitionOf(5678, 2)]).toEqual([1, 0]);
  });
});

describe('responses', () => {
  it('filter_path includes and excludes with wildcards', () => {
    const body = { took: 1, hits: { hits: [{ _id: '1', _source: { a: 1, b: { c: 2 } } }] } };
    expect(applyFilterPath(body, 'hits.hits._id')).toEqual({ hits: { hits: [{ _id: '1' }] } });
    expect(applyFilterPath(body, '-**.b,-took')).toEqual({ hits: { hits: [{ _id: '1', _source: { a: 1 } }] } });
  });
  it('_source filtering with includes, excludes and object paths', () => {
    const src = { a: { x: 1, y: 2 }, b: 3 };
    expect(filterSource(src, sourceSpec(['a.x']))).toEqual({ a: { x: 1 } });
    expect(filterSource(src, sourceSpec({ includes: ['a'], excludes: ['*.y'] }))).toEqual({ a: { x: 1 } });
    expect(filterSource(src, sourceSpec(false))).toBeUndefined();
  });
  it('ip values are 128-bit with IPv4 mapped, and CIDR masks', () => {
    expect(bigToIp(ipToBig('192.168.0.7')!)).toBe('192.168.0.7');
    expect(bigToIp(ipToBig('::1')!)).toBe('::1');
    expect(cidr('::/24')!.map(bigToIp)).toEqual(['::', '0:100::']);
  });
});

describe('exact numbers (numbers.ts)', () => {
  const long = { path: 'n', type: 'long', def: {} };

  it('a query body becomes doubles; a document keeps its bigints and answers them digit for digit', () => {
    const body = parseJsonExact('{"range":{"n":{"gte":9007199254740993,"lt":0.10000000000000000001}},"k":[1,2]}') as JsonObject;
    const d = asDoubles(body) as any;
    expect(d.range.n).toEqual({ gte: 9007199254740992, lt: 0.1 });
    expect(d.k).toBe((body as any).k); // untouched parts are not copied
    const doc = parseJsonExact('{"n":-9223372036854775808,"x":{"r":123456789012345678901}}');
    expect(serialize({ _source: doc })).toBe('{"_source":{"n":-9223372036854775808,"x":{"r":123456789012345678901}}}');
    expect(serialize({ sum: 1e20 })).toBe('{"sum":1e+20}');
  });

  it('a long range-checks a bigint exactly and searches with its nearest double', () => {
    expect(coerceNumber(long, 9223372036854775807n as never, '1')).toBe(2 ** 63);
    expect(() => coerceNumber(long, 9223372036854775808n as never, '1')).toThrow(/Preview of field's value: '9223372036854775808'/);
    expect(coerceNumber({ ...long, type: 'unsigned_long' }, 18446744073709551615n as never, '1')).toBe(2 ** 64);
    expect(() => coerceNumber({ ...long, type: 'integer' }, 9007199254740993n as never, '1')).toThrow(/type \[integer\]/);
  });

  it('a document holding an inexact decimal is a mapper_parsing_exception naming the field and quoting it', () => {
    expect(() => refuseInexact(parseJsonExact('{"a":{"b":[1,1e400]}}'), 'x')).toThrow(/\[a\.b\].*'1e400'/);
    expect(() => refuseInexact(parseJsonExact('{"a":12345678901234567891,"f":0.1}'), 'x')).not.toThrow();
  });
});
