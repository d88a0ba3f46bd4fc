/**
 * Term-expanding queries as plan inputs (libs/es-compat/src/text-plan.ts, plan-expand.ts), over
 * HTTPS against the built server: wildcard, regexp, fuzzy and prefix on text and keyword fields,
 * `match` with fuzziness, match_bool_prefix, match_phrase_prefix, multi_match cross_fields over
 * several fields, phrase_prefix and bool_prefix, function_score, and query_string wildcards and
 * fuzzy terms. Their terms are expanded from the index's term dictionary (text) or values
 * (keyword) into the plan's fts `terms` clause or `in` list; aggregations, `_count` and pages
 * sorted by fields under them run as plans and answer as the Query DSL scorer over the view does
 * (taken with a `post_filter` / `terminate_after`); a user under a row-level policy sees only its
 * rows through them.
 */
import { bootstrapEnv, TestServer, TOKEN } from './server';
import { EsPlanCheck, T } from './es-plan-check';
const WORDS = 'alpha alpine beta better gamma gammon delta river rivet stone stove cloud clout forest forrest'.split(' ');
// two terms aggregations, two histograms, one filters aggregation in the metrics node: six aggregate plans (as es-text-plans)
const AGGS = {
  tags: { terms: { field: 'tag', size: 20 } }, few: { terms: { field: 'tag', size: 3, order: { _key: 'asc' } } },
  nt: { terms: { field: 'n', size: 5 } }, h: { histogram: { field: 'n', interval: 100 } }, h2: { histogram: { field: 'n', interval: 250, min_doc_count: 1 } },
  s: { stats: { field: 'n' } }, f: { filters: { filters: { low: { range: { n: { lt: 300 } } }, w: { wildcard: { body: 'riv*' } }, fz: { fuzzy: { title: 'gama' } } }, other_bucket: true } },
};

const QUERIES: unknown[] = [
  { wildcard: { body: 'riv*' } },
  { wildcard: { body: { value: 'st?ve', boost: 2 } } },
  { wildcard: { body: '*ou*' } },
  { wildcard: { title: { value: 'ALP*', case_insensitive: true } } },
  { wildcard: { tag: 'g?' } },
  { wildcard: { tag: '*3' } },
  { regexp: { body: 'al(pha|pine)' } },
  { regexp: { tag: 'g[1-3]' } },
  { fuzzy: { body: 'rivr' } },
  { fuzzy: { body: { value: 'stane', fuzziness: 2, prefix_length: 1 } } },
  { fuzzy: { tag: { value: 'gx', fuzziness: 1 } } },
  { prefix: { body: 'a' } },
  { prefix: { tag: 'g1' } },
  { match: { body: { query: 'rivr stome', fuzziness: 'AUTO' } } },
  { match: { body: { query: 'gama clod', fuzziness: 1, operator: 'and' } } },
  { match: { title: { query: 'betta forst alpah', fuzziness: 2, minimum_should_match: 2, prefix_length: 1 } } },
  { match_bool_prefix: { body: 'river st' } },
  { match_bool_prefix: { body: { query: 'alpha river cl', minimum_should_match: 2 } } },
  { match_phrase_prefix: { body: 'river st' } },
  { match_phrase_prefix: { title: 'clo' } },
  { multi_match: { query: 'alpha river', fields: ['title', 'body'], type: 'cross_fields', operator: 'and' } },
  { multi_match: { query: 'alpha river stone', fields: ['title', 'body'], type: 'cross_fields', minimum_should_match: 2 } },
  { multi_match: { query: 'river sto', fields: ['title', 'body'], type: 'phrase_prefix' } },
  { multi_match: { query: 'alpha be', fields: ['title', 'body'], type: 'bool_prefix' } },
  { function_score: { query: { match: { body: 'river' } }, functions: [{ gauss: { n: { origin: 500, scale: 100 } } }, { weight: 3, filter: { wildcard: { tag: 'g2' } } }], boost_mode: 'sum' } },
  { bool: { must: [{ wildcard: { body: 'gam*' } }, { match: { title: 'alpha' } }], must_not: { fuzzy: { tag: 'g0' } } } },
  { bool: { should: [{ fuzzy: { title: 'stonne' } }, { prefix: { tag: 'g5' } }, { regexp: { body: 'clou.' } }], minimum_should_match: 2 } },
  { query_string: { query: 'riv* AND title:al*' } },
  { query_string: { query: 'body:rivr~1 OR tag:g?', default_operator: 'or' } },
  { exists: { field: 'title' } },
  { intervals: { body: { any_of: { intervals: [{ match: { query: 'river stone' } }, { match: { query: 'cloud forest', ordered: true, max_gaps: 0 } }, { wildcard: { pattern: 'gam*' } }] } } } },
  { bool: { must_not: { exists: { field: 'title' } }, should: [{ fuzzy: { body: 'stane' } }], minimum_should_match: 1 } },
  { multi_match: { query: 'g1 alpha', fields: ['title', 'tag'], type: 'cross_fields' } },
  { multi_match: { query: 'alpha river', fields: ['title', 'body', 'tag'], type: 'cross_fields', operator: 'and' } },
  // exists with a wildcard: every mapped field it names (none: no document)
  { exists: { field: 't*' } },
  { bool: { should: [{ exists: { field: 'zz*' } }, { bool: { must_not: { exists: { field: '*i*' } } } }] } },
  // cross_fields with a number field: the whole query as its term (a query it cannot hold matches nothing there)
  { multi_match: { query: '500', fields: ['title', 'n'], type: 'cross_fields' } },
  { multi_match: { query: 'alpha river', fields: ['body', 'n'], type: 'cross_fields', operator: 'and' } },
];

describe('ES term-expanding queries as plans', () => {
  let srv: TestServer;
  let c: EsPlanCheck;
  const es = (method: string, p: string, body?: unknown, token = TOKEN) => c.es(method, p, body, token);

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    c = new EsPlanCheck(srv, 'pats');
    await es('PUT', '/pats', { mappings: { properties: { title: { type: 'text' }, body: { type: 'text' }, tag: { type: 'keyword' }, n: { type: 'long' } } } });
    let seed = 11;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const words = (k: number) => Array.from({ length: k }, () => WORDS[Math.floor(rnd() * WORDS.length)]).join(' ');
    // ids h… are hidden from the restricted user below; every 13th document has no n
    await c.bulk(Array.from({ length: 1200 }, (_, i): [string, Record<string, unknown>] => [i % 10 === 7 ? `h${i}` : `d${i}`,
      { ...(i % 11 ? { title: words(1 + Math.floor(rnd() * 3)) } : {}), body: words(2 + Math.floor(rnd() * 8)), tag: `g${i % 7}`, ...(i % 13 ? { n: (i * 37) % 1000 } : {}) }]));
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('aggregations, counts and sorted pages under them run as plans, equal to the scorer over the view', async () => {
    await es('POST', '/pats/_search', { size: 0, aggs: AGGS }); // the plain-value check, cached by the table's LSN
    for (const query of QUERIES) {
      await c.aggs(AGGS, query, 6);
      await c.count(query);
      await c.page({ query, sort: [{ n: 'desc' }, { tag: 'asc' }], size: 15, from: 3 });
    }
    // the matches are not all or nothing: the corpus makes each pattern query select some documents, most of them not all
    const counts = await Promise.all(QUERIES.slice(0, 12).map(async (query) => (await es('POST', '/pats/_count', { query })).count));
    expect(counts.filter((n) => n === 0)).toEqual([]);
    expect(counts.filter((n) => n < 1200).length).toBeGreaterThanOrEqual(10);
  }, 180_000);

  it('expansions follow writes (a new term is found at once) and forms the plans do not answer exactly stay equal on the scorer', async () => {
    const q = { wildcard: { body: 'zeb*' } };
    expect((await es('POST', '/pats/_count', { query: q })).count).toBe(0);
    await es('PUT', '/pats/_doc/z1', { title: 'x', body: 'zebra zebu', tag: 'g1', n: 1 });
    expect((await es('POST', '/pats/_count', { query: q })).count).toBe(1);
    expect((await es('POST', '/pats/_search', { size: 0, query: { fuzzy: { body: 'zebro' } }, aggs: AGGS })).hits.total.value).toBe(1);
    await es('DELETE', '/pats/_doc/z1');
    // a phrase prefix whose last word expands past max_expansions, a function_score with min_score: the scorer over the view
    for (const query of [{ match_phrase_prefix: { body: { query: 'river c', max_expansions: 1 } } }, { function_score: { query: { wildcard: { body: 'riv*' } }, min_score: 2, boost_mode: 'replace', functions: [{ weight: 3, filter: { term: { tag: 'g1' } } }] } }]) {
      const a = await c.aggs(AGGS, query, 0);
      expect(a.hits.total.value).toBeGreaterThan(0);
    }
    // cross_fields with a keyword field: Elasticsearch's groups by analyzer (the keyword's group holds the whole query as one
    // term), so 'g1 alpha' over title and tag matches what a match on title does (no tag is 'g1 alpha'), not tag g1 OR title alpha
    const count = async (query: unknown) => (await es('POST', '/pats/_count', { query })).count;
    expect(await count(QUERIES[32])).toBe(await count({ match: { title: 'g1 alpha' } }));
    expect(await count(QUERIES[32])).toBeLessThan(await count({ bool: { should: [{ match: { title: 'alpha' } }, { term: { tag: 'g1' } }] } }));
    // an invalid regex: the scorer reports Elasticsearch's error
    const bad = await srv.request('POST', `${T}/es/pats/_count`, { token: TOKEN, body: { query: { regexp: { body: 'a'.repeat(1001) } } } });
    expect([bad.status, JSON.stringify(bad.json)]).toEqual([400, expect.stringContaining('index.max_regex_length')]);
  }, 60_000);

  it('histogram options (offset, extended_bounds, min_doc_count, order, keyed) run as grouped plans, at the top and under terms, equal to the aggregation code', async () => {
    const aggs = {
      hx: { histogram: { field: 'n', interval: 100, offset: 30, extended_bounds: { min: -250, max: 1400 } } },
      hk: { histogram: { field: 'n', interval: 200, keyed: true, order: { _count: 'desc' } } },
      hm: { histogram: { field: 'n', interval: 50, min_doc_count: 3, order: [{ _key: 'desc' }], offset: -7 } },
      he: { histogram: { field: 'n', interval: 100, extended_bounds: { min: 5000, max: 5300 } } },
      rk: { range: { field: 'n', keyed: true, ranges: [{ to: 250 }, { from: 250, to: 600, key: 'mid' }, { from: 600 }] } },
      t: { terms: { field: 'tag', size: 3 }, aggs: { h: { histogram: { field: 'n', interval: 300, offset: 10, extended_bounds: { min: 0, max: 1500 }, keyed: true } } } },
    };
    await es('POST', '/pats/_search', { size: 0, aggs });
    // the metrics node, one grouped node per histogram, the terms node and its histogram child's (none when no bucket is shown)
    for (const [query, n] of [[undefined, 7], [QUERIES[0], 7], [QUERIES[13], 7], [{ bool: { filter: [{ range: { n: { gte: 2000 } } }] } }, 6]] as const) await c.aggs(aggs, query, n);
    const all = (await es('POST', '/pats/_search', { size: 0, aggs })).aggregations;
    expect(all.hx.buckets[0].key).toBe(-270);
    expect(Object.keys(all.hk.buckets)).toContain('0.0');
    expect(all.he.buckets[all.he.buckets.length - 1].key).toBe(5300);
  }, 120_000);

  it('terms whose sub-aggregations the window nodes do not take (three levels of terms, histograms with sub-aggregations) run a level of plans per shown bucket, equal to the aggregation code', async () => {
    const aggs = {
      t3: { terms: { field: 'tag', size: 3 }, aggs: { n: { terms: { field: 'n', size: 2, order: { _key: 'desc' } }, aggs: { t: { terms: { field: 'tag', size: 2 } } } } } },
      th: { terms: { field: 'tag', size: 2, missing: 'none' }, aggs: { h: { histogram: { field: 'n', interval: 250 }, aggs: { a: { avg: { field: 'n' } }, w: { filter: { wildcard: { body: 'riv*' } } } } } } },
      // a terms child with min_doc_count 0, a histogram ordered by its metric under terms: per bucket too
      tz: { terms: { field: 'tag', size: 2 }, aggs: { z: { terms: { field: 'n', min_doc_count: 0, size: 3, order: { _key: 'asc' } } } } },
      to: { terms: { field: 'tag', size: 2 }, aggs: { h: { histogram: { field: 'n', interval: 300, order: { a: 'desc' } }, aggs: { a: { avg: { field: 'n' } } } } } },
    };
    await es('POST', '/pats/_search', { size: 0, aggs }); // the plain-value check, cached by the table's LSN
    // the metrics node; t3: its grouped node and per bucket (3) the level's metrics node, terms node and its child's; th: its grouped node and per bucket (2) a metrics node and the histogram's
    for (const [query, n] of [[undefined, 26], [QUERIES[0], 26], [{ bool: { filter: [{ range: { n: { gte: 5000 } } }] } }, 5]] as const) await c.aggs(aggs, query, n);
  }, 120_000);

  it('terms include / exclude as regular expressions or partitions run as grouped plans (the keys the aggregation code keeps, listed), equal to the aggregation code', async () => {
    const aggs = {
      rx: { terms: { field: 'tag', include: 'g[1-4]', exclude: 'g3' } },
      px: { terms: { field: 'tag', include: { partition: 1, num_partitions: 3 }, size: 10 } },
      mx: { terms: { field: 'tag', missing: 'gone', include: 'g.*|go.*' }, aggs: { a: { avg: { field: 'n' } } } },
      none: { terms: { field: 'tag', include: 'zz.*' } },
      // min_doc_count 0 with a missing key on an integer field: every key of the index (the missing one when a document lacks n)
      zn: { terms: { field: 'n', min_doc_count: 0, missing: -1, size: 5, order: { _key: 'asc' } } },
      pn: { terms: { field: 'n', include: { partition: 2, num_partitions: 5 }, exclude: [31, 62], size: 4 } },
    };
    await es('POST', '/pats/_search', { size: 0, aggs });
    // a terms aggregation's grouped node each (in the one level: the metrics node too)
    for (const query of [undefined, QUERIES[0], QUERIES[13]]) await c.aggs(aggs, query, 7);
    const all = (await es('POST', '/pats/_search', { size: 0, aggs })).aggregations;
    expect(all.rx.buckets.map((b: { key: string }) => b.key).sort()).toEqual(['g1', 'g2', 'g4']);
    expect(all.none.buckets).toEqual([]);
  }, 60_000);

  it('a global aggregation through a filtered alias reads the alias\'s documents as a level of plans, equal to the aggregation code', async () => {
    await es('POST', '/_aliases', { actions: [{ add: { index: 'pats', alias: 'pats_g2', filter: { wildcard: { tag: 'g[2]' } } } }, { add: { index: 'pats', alias: 'pats_riv', filter: { prefix: { body: 'riv' } } } }] });
    const aggs = { all: { global: {}, aggs: { t: { terms: { field: 'tag' } }, h: { histogram: { field: 'n', interval: 200 } } } }, t: { terms: { field: 'tag', size: 3 } } };
    for (const alias of ['pats_g2', 'pats_riv']) {
      for (const query of [undefined, QUERIES[8]]) {
        const body = { size: 0, aggs, ...(query ? { query } : {}) };
        await es('POST', `/${alias}/_search`, body);
        const before = await c.plans();
        const planned = await es('POST', `/${alias}/_search`, body);
        // the metrics node, the terms node, the global level's metrics, terms and histogram nodes
        expect([alias, query, (await c.plans()) - before]).toEqual([alias, query, 5]);
        expect(planned.aggregations).toEqual((await es('POST', `/${alias}/_search`, { ...body, post_filter: { match_all: {} } })).aggregations);
      }
    }
  }, 60_000);

  it('pages sorted with a missing value, a mode, unmapped_type, _doc or _id run as sort plans, equal to the full search', async () => {
    const sorts = [
      [{ n: { order: 'desc', missing: 500, mode: 'avg' } }, { tag: { order: 'asc', missing: 'g3', unmapped_type: 'keyword' } }],
      [{ n: { order: 'asc', missing: '250', mode: 'median' } }],
      [{ tag: { order: 'desc', mode: 'max' } }, { n: { missing: -1 } }],
      ['_doc'], [{ _doc: 'desc' }], [{ tag: 'asc' }, { _doc: { order: 'desc' } }], [{ _id: 'desc' }], [{ n: 'asc' }, '_id'],
    ];
    for (const sort of sorts) for (const query of [undefined, QUERIES[0], QUERIES[13]]) await c.page({ ...(query ? { query } : {}), sort, size: 20, from: 40 });
    // documents without n sort where the missing value puts them
    const first = await es('POST', '/pats/_search', { sort: [{ n: { missing: -1 } }], size: 3 });
    expect(first.hits.hits[0].sort).toEqual([-1]);
    // a keyword sorted by a numeric mode: the full search answers (and reports what Elasticsearch does)
    const kw = { sort: [{ tag: { mode: 'avg' } }], size: 3 };
    const k0 = await c.plans();
    const a = await srv.request('POST', `${T}/es/pats/_search`, { token: TOKEN, body: kw });
    expect((await c.plans()) - k0).toBe(0);
    expect(a.status).toBe((await srv.request('POST', `${T}/es/pats/_search`, { token: TOKEN, body: { ...kw, post_filter: { match_all: {} } } })).status);
  }, 120_000);

  it('text fields analyzed with whitespace or simple: their queries run as plans while the tokens are plain lowercase words, equal to the scorer', async () => {
    const a = new EsPlanCheck(srv, 'anas');
    await es('PUT', '/anas', { mappings: { properties: { w: { type: 'text', analyzer: 'whitespace' }, s: { type: 'text', analyzer: 'simple' }, tag: { type: 'keyword' } } } });
    await a.bulk(Array.from({ length: 300 }, (_, i): [string, Record<string, unknown>] => [i % 10 === 7 ? `h${i}` : `a${i}`, {
      w: `${WORDS[i % 15]} ${WORDS[(i * 7) % 15]} x${i % 9}`, s: `${WORDS[(i * 3) % 15].toUpperCase()}, ${WORDS[(i * 11) % 15]}!`, tag: `g${i % 5}`,
    }]));
    const aggs = { t: { terms: { field: 'tag' } } };
    await es('POST', '/anas/_search', { size: 0, aggs });
    const qs = [{ match: { w: 'river x3' } }, { match_phrase: { w: 'alpine river' } }, { wildcard: { w: 'x*' } }, { fuzzy: { s: 'rivet' } }, { match: { s: { query: 'BETTER cloud', operator: 'and' } } }, { match_bool_prefix: { s: 'better cl' } }];
    // the metrics node and the terms node (a terms aggregation alone: one plan)
    for (const q of qs) { await a.aggs(aggs, q, 1); await a.count(q); }
    // under a row-level policy: the reader's rows only
    const token = await a.reader('areader');
    await es('POST', '/anas/_search', { size: 0, aggs }, token);
    for (const q of [qs[0], qs[3], qs[5]]) await a.asReader(token, aggs, q, 1);
    // terms with min_doc_count 0 and a missing key: a keyword's zero buckets are its values, the missing key only where a match has no value
    await es('PUT', '/anas/_doc/nt1', { w: 'zzz', s: 'zzz' });
    await es('PUT', '/anas/_doc/nt2', { w: 'zzz yyy', s: 'yyy' });
    const z = { z: { terms: { field: 'tag', missing: 'none', min_doc_count: 0, size: 10 } } };
    await es('POST', '/anas/_search', { size: 0, aggs: z });
    // the metrics node and the terms node (min_doc_count 0: not the one-plan form)
    for (const q of [undefined, { match: { w: 'zzz' } }, { match: { w: 'river' } }]) await a.aggs(z, q, 2);
    const keys = async (q: unknown) => (await es('POST', '/anas/_search', { size: 0, aggs: z, query: q })).aggregations.z.buckets.map((b: { key: string }) => b.key).sort();
    expect(await keys({ match: { w: 'river' } })).toEqual(['g0', 'g1', 'g2', 'g3', 'g4']);
    expect(await keys({ match: { w: 'zzz' } })).toEqual(['g0', 'g1', 'g2', 'g3', 'g4', 'none']);
    await es('DELETE', '/anas/_doc/nt1');
    await es('DELETE', '/anas/_doc/nt2');
    // a capital in a whitespace-analyzed value: the fts column would lowercase it, Elasticsearch does not: the scorer answers
    await es('PUT', '/anas/_doc/up', { w: 'River', s: 'x', tag: 'g1' });
    await es('POST', '/anas/_search', { size: 0, aggs });
    for (const q of [qs[0], qs[1], qs[2]]) {
      const body = { size: 0, aggs, query: q };
      expect((await es('POST', '/anas/_search', body)).aggregations).toEqual((await es('POST', '/anas/_search', { ...body, post_filter: { match_all: {} } })).aggregations);
    }
    // (the text-plan spec shows such a field's query compiles to null); the simple-analyzed field still plans
    await a.aggs(aggs, qs[3], 1);
  }, 60_000);

  it('a user under a row-level policy aggregates, counts and pages only the rows it may read through these plans', async () => {
    const token = await c.reader('preader');
    await es('POST', '/pats/_search', { size: 0, aggs: AGGS }, token);
    for (const query of [QUERIES[0], QUERIES[4], QUERIES[8], QUERIES[13], QUERIES[16], QUERIES[18], QUERIES[20], QUERIES[24], QUERIES[26], QUERIES[30], QUERIES[31], QUERIES[6], QUERIES[11], QUERIES[27]]) {
      // the plan path (six aggregate plans) under the reader's policy, equal to the owner's answer without the hidden rows
      const mine = await c.asReader(token, AGGS, query, 6);
      expect(mine.hits.total.value).toBeLessThan((await es('POST', '/pats/_search', { size: 0, query, aggs: AGGS })).hits.total.value);
      const page = await es('POST', '/pats/_search', { query, sort: [{ n: 'asc' }], size: 50 }, token);
      expect(page.hits.hits.length).toBeGreaterThan(0);
      expect(page.hits.hits.some((h: { _id: string }) => h._id.startsWith('h'))).toBe(false);
    }
    // deeper terms (a level per bucket) and a regex include under the policy
    const deep = { t3: { terms: { field: 'tag', size: 3 }, aggs: { n: { terms: { field: 'n', size: 2 }, aggs: { t: { terms: { field: 'tag', size: 2 } } } } } }, rx: { terms: { field: 'tag', include: 'g[1-4]' } } };
    await c.asReader(token, deep, QUERIES[0], 12);
    // histogram options as plans under the policy
    await c.asReader(token, { hx: { histogram: { field: 'n', interval: 100, offset: 30, extended_bounds: { min: -250, max: 1400 }, keyed: true, order: { _count: 'asc' } } } }, QUERIES[0], 2);
    // a term only hidden documents hold is not expanded for the reader: no match, through the plan
    await es('PUT', '/pats/_doc/hq', { title: 'quokka', body: 'quokka', tag: 'g1', n: 3 });
    expect((await es('POST', '/pats/_count', { query: { wildcard: { body: 'quok*' } } })).count).toBe(1);
    expect((await es('POST', '/pats/_count', { query: { wildcard: { body: 'quok*' } } }, token)).count).toBe(0);
    expect((await es('POST', '/pats/_search', { size: 0, query: { fuzzy: { title: 'quokko' } }, aggs: AGGS }, token)).aggregations.tags.buckets).toEqual([]);
  }, 180_000);
});
