/**
 * Text queries other than one-field matches as plan inputs (libs/es-compat/src/text-plan.ts), over
 * HTTPS against the built server: phrases, clauses on several fields, multi_match, query_string,
 * simple_query_string, nested bools, percentage minimum_should_match, dis_max, constant_score,
 * boosting, ids. Aggregations, `_count` and pages sorted by fields under them run as plans (fts_search
 * nodes joined on `_id`, set_op unions, predicates) and answer as the Query DSL scorer over the
 * view does (taken with a `post_filter` / `terminate_after`); a user under a row-level policy sees
 * only its rows through them.
 */
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;
const WORDS = 'alpha beta gamma delta river stone cloud forest'.split(' ');
// five grouped aggregations (three terms, two histograms) and the metrics: six aggregate plans
const AGGS = {
  tags: { terms: { field: 'tag', size: 20 } }, few: { terms: { field: 'tag', size: 3, order: { _key: 'asc' } } },
  nt: { terms: { field: 'n', size: 5 } }, h: { histogram: { field: 'n', interval: 100 } }, h2: { histogram: { field: 'n', interval: 250, min_doc_count: 1 } },
  s: { stats: { field: 'n' } }, f: { filters: { filters: { low: { range: { n: { lt: 300 } } }, g1: { term: { tag: 'g1' } }, txt: { match: { title: 'alpha' } } }, other_bucket: true } },
};

const QUERIES: unknown[] = [
  { match_phrase: { body: 'alpha beta' } },
  { match_phrase: { body: { query: 'river stone', slop: 2 } } },
  { match_phrase: { body: 'gamma delta river' } },
  { match_phrase: { title: 'cloud' } },
  { bool: { must: [{ match: { title: 'alpha' } }, { match: { body: 'beta' } }] } },
  { bool: { should: [{ match: { title: 'alpha' } }, { match: { body: 'gamma' } }] } },
  { bool: { should: [{ match: { title: 'alpha' } }, { match: { body: 'gamma' } }, { range: { n: { lt: 400 } } }], minimum_should_match: 2 } },
  { bool: { must: { match: { title: 'river' } }, must_not: { match: { body: 'stone' } } } },
  { bool: { must_not: [{ match: { body: 'alpha' } }, { term: { tag: 'g2' } }] } },
  { bool: { filter: [{ match: { body: 'delta' } }], should: [{ match: { title: 'forest' } }] } },
  { bool: { should: [{ bool: { must: [{ match: { title: 'alpha' } }, { match: { body: 'cloud' } }] } }, { bool: { must: [{ match: { title: 'beta' } }], must_not: [{ match: { body: 'alpha' } }] } }, { match_phrase: { body: 'stone cloud' } }], minimum_should_match: '50%' } },
  { multi_match: { query: 'alpha river', fields: ['title', 'body'] } },
  { multi_match: { query: 'alpha river', fields: ['title', 'body^2'], type: 'most_fields', operator: 'and' } },
  { multi_match: { query: 'river stone', fields: ['title', 'body'], type: 'phrase' } },
  { multi_match: { query: 'gamma', fields: ['t*', 'tag'] } },
  { query_string: { query: 'title:alpha AND (body:river OR body:"stone cloud")' } },
  { query_string: { query: 'alpha -river', fields: ['title', 'body'], default_operator: 'and' } },
  { query_string: { query: 'tag:g3 OR title:delta', default_operator: 'or' } },
  { simple_query_string: { query: 'alpha + "river stone" -cloud', fields: ['title', 'body'] } },
  { match: { body: { query: 'alpha beta gamma delta', minimum_should_match: '75%' } } },
  { match: { body: { query: 'alpha beta gamma', minimum_should_match: 2 } } },
  { match: { body: { query: 'the', zero_terms_query: 'none' } } },
  { dis_max: { queries: [{ match: { title: 'stone' } }, { match: { body: 'forest cloud' } }] } },
  { constant_score: { filter: { match: { title: 'gamma' } } } },
  { boosting: { positive: { match: { body: 'river' } }, negative: { match: { title: 'river' } }, negative_boost: 0.5 } },
  { bool: { must: [{ match: { tag: 'g4' } }, { match: { body: 'alpha' } }] } },
  { prefix: { body: 'riv' } },
  { bool: { must: [{ prefix: { tag: 'g' } }, { exists: { field: 'n' } }], should: { prefix: { title: { value: 'clo' } } }, minimum_should_match: 1 } },
  { bool: { must_not: { exists: { field: 'n' } }, should: [{ prefix: { title: 'al' } }, { match: { body: 'cloud' } }] } },
  { bool: { must: [{ ids: { values: ['d1', 'd2', 'd3', 'd10', 'd11', 'd500'] } }], should: [{ match: { body: 'beta' } }], minimum_should_match: 1 } },
];

describe('ES text queries as plans', () => {
  let srv: TestServer;
  const es = async (method: string, p: string, body?: unknown, token = TOKEN) => {
    const r = await srv.request(method, `${T}/es${p}`, { token, ...(body === undefined ? {} : { body }) });
    if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${r.text}`);
    return r.json;
  };
  /** Plans the ES surface has run (the executor's latency count for surface "es"). */
  const plans = async () => Number(/db_query_latency_ms_count\{surface="es"\} (\d+)/.exec((await srv.request('GET', '/metrics')).text)?.[1] ?? 0);

  /** A size-0 search with `aggs` under `query`: it runs `n` plans and answers the aggregations the code over the view (taken with a `post_filter`) does. */
  const asViewed = async (aggs: unknown, query: unknown, n: number) => {
    const body = { size: 0, aggs, ...(query ? { query } : {}) };
    const before = await plans();
    const planned = await es('POST', '/texts/_search', body);
    expect([query, (await plans()) - before]).toEqual([query, n]);
    const viewed = await es('POST', '/texts/_search', { ...body, post_filter: { match_all: {} } });
    expect(planned.aggregations).toEqual(viewed.aggregations);
    return planned;
  };

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    await es('PUT', '/texts', { mappings: { properties: { title: { type: 'text' }, body: { type: 'text' }, tag: { type: 'keyword' }, n: { type: 'long' } } } });
    let seed = 5;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const words = (k: number) => Array.from({ length: k }, () => WORDS[Math.floor(rnd() * WORDS.length)]).join(' ');
    const lines: string[] = [];
    for (let i = 0; i < 1500; i++) {
      // ids h… are hidden from the restricted user below
      const id = i % 10 === 7 ? `h${i}` : `d${i}`;
      const doc: Record<string, unknown> = { title: words(1 + Math.floor(rnd() * 3)), body: `${words(2 + Math.floor(rnd() * 8))}${i % 9 === 0 ? ' the' : ''}`, tag: `g${i % 7}`, n: (i * 31) % 1000 };
      if (i % 13 === 0) delete doc.n;
      lines.push(JSON.stringify({ index: { _index: 'texts', _id: id } }), JSON.stringify(doc));
    }
    const bulk = await srv.request('POST', `${T}/es/_bulk`, { token: TOKEN, raw: lines.join('\n') + '\n', contentType: 'application/x-ndjson' });
    expect(bulk.json.errors).toBe(false);
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('aggregations, counts and sorted pages under them run as plans, equal to the scorer over the view', async () => {
    await es('POST', '/texts/_search', { size: 0, aggs: AGGS }); // the plain-value check, cached by the table's LSN
    for (const query of QUERIES) {
      const before = await plans();
      const planned = await es('POST', '/texts/_search', { size: 0, query, aggs: AGGS });
      expect([query, (await plans()) - before]).toEqual([query, 6]);
      const viewed = await es('POST', '/texts/_search', { size: 0, query, aggs: AGGS, post_filter: { match_all: {} } });
      expect([query, planned.hits.total]).toEqual([query, viewed.hits.total]);
      expect(planned.aggregations).toEqual(viewed.aggregations);
      // _count: an aggregate plan; min_score=0 takes the scorer over the view
      const c0 = await plans();
      const count = (await es('POST', '/texts/_count', { query })).count;
      expect((await plans()) - c0).toBe(1);
      expect(count).toBe((await es('POST', '/texts/_count?min_score=0', { query })).count);
      // a page sorted by a field: sort and limit nodes over the same input
      const page = { query, sort: [{ n: 'desc' }, { tag: 'asc' }], size: 15, from: 3 };
      const sp = await es('POST', '/texts/_search', page);
      const sv = await es('POST', '/texts/_search', { ...page, post_filter: { match_all: {} } });
      expect(sp.hits.total).toEqual(sv.hits.total);
      expect(sp.hits.hits.map((h: { _id: string; sort: unknown }) => [h._id, h.sort])).toEqual(sv.hits.hits.map((h: { _id: string; sort: unknown }) => [h._id, h.sort]));
    }
    // a phrase over a field holding arrays: Elasticsearch leaves a gap between values, our column does not, so the scorer answers
    await es('PUT', '/texts/_doc/arr', { title: ['alpha', 'beta'], body: 'one', tag: 'g1', n: 5 });
    const q = { match_phrase: { title: 'alpha beta' } };
    const r = await es('POST', '/texts/_search', { size: 0, query: q, aggs: AGGS });
    expect(r.aggregations).toEqual((await es('POST', '/texts/_search', { size: 0, query: q, aggs: AGGS, post_filter: { match_all: {} } })).aggregations);
    expect((await es('POST', '/texts/_count', { query: { match: { title: 'alpha' } } })).count)
      .toBe((await es('POST', '/texts/_count?min_score=0', { query: { match: { title: 'alpha' } } })).count);
    await es('DELETE', '/texts/_doc/arr');
  }, 120_000);

  it('terms options, filters with an other bucket and filter aggregations of text queries run as aggregate plans, equal to the aggregation code', async () => {
    const aggs = {
      // min_doc_count (buckets below it are neither shown nor others), missing, include / exclude lists
      md: { terms: { field: 'n', size: 4, min_doc_count: 2 } }, mk: { terms: { field: 'tag', size: 3, min_doc_count: 220, order: { _key: 'desc' } } },
      miss: { terms: { field: 'n', size: 3, missing: -1 } }, missk: { terms: { field: 'tag', missing: 'none', include: ['g1', 'g2', 'none'] } },
      inc: { terms: { field: 'tag', include: ['g1', 'g3', 'zz'], exclude: ['g3'] } }, zero: { terms: { field: 'tag', min_doc_count: 0, size: 9, order: { _key: 'asc' } }, aggs: { a: { avg: { field: 'n' } }, c: { value_count: { field: 'n' } } } },
      zn: { terms: { field: 'n', min_doc_count: 0, size: 4, exclude: [0] } }, exc: { terms: { field: 'n', size: 2, exclude: [0, 31, 62] } },
      // filters: an other bucket (named, keyed arrays, lists) and any query text-plan.ts maps
      fo: { filters: { other_bucket: true, filters: { b: { match: { body: 'alpha' } }, a: { multi_match: { query: 'river', fields: ['title', 'body'] } } } } },
      fk: { filters: { other_bucket_key: 'rest', keyed: true, filters: [{ term: { tag: 'g1' } }, { match_phrase: { body: 'stone cloud' } }] } },
      fl: { filters: { other_bucket: true, filters: [{ range: { n: { lt: 500 } } }, { bool: { should: [{ match: { title: 'gamma' } }, { term: { tag: 'g2' } }] } }] } },
      ft: { filter: { query_string: { query: 'title:alpha OR body:"river stone"' } } }, fn: { filter: { bool: { must_not: { match: { body: 'beta' } } } } },
    };
    await es('POST', '/texts/_search', { size: 0, aggs }); // the plain-value check, cached by the table's LSN
    for (const query of [undefined, QUERIES[5], QUERIES[0], { bool: { filter: [{ range: { n: { gte: 100 } } }] } }, { bool: { filter: [{ term: { tag: 'g2' } }] } }]) {
      // the metrics node and one per terms aggregation, one more for each min_doc_count above 1
      const planned = await asViewed(aggs, query, 11);
      expect(Object.keys(planned.aggregations.fo.buckets)).toEqual(['a', 'b', '_other_']);
      expect(Object.keys(planned.aggregations.fk.buckets)).toEqual(['0', '1', 'rest']);
      expect(planned.aggregations.fl.buckets).toHaveLength(3);
      expect(planned.aggregations.zero.buckets.map((x: { key: string }) => x.key)).toEqual(['g0', 'g1', 'g2', 'g3', 'g4', 'g5', 'g6']);
    }
  }, 120_000);

  it('sub-aggregations of a terms aggregation (terms, histograms, filter(s), range, missing, metrics) run as grouped and window plans, equal to the aggregation code', async () => {
    const sub = { avg_n: { avg: { field: 'n' } }, lo: { filter: { range: { n: { lt: 200 } } } }, al: { filters: { other_bucket: true, filters: { a: { match: { title: 'alpha' } } } } },
      r: { range: { field: 'n', ranges: [{ to: 500 }, { from: 500, key: 'high' }] } }, nn: { missing: { field: 'n' } } };
    const aggs = {
      by_tag: { terms: { field: 'tag', size: 5 }, aggs: { ...sub, ns: { terms: { field: 'n', size: 3, order: { _key: 'desc' } }, aggs: { st: { stats: { field: 'n' } }, f: { filter: { match: { body: 'alpha' } } } } } } },
      by_n: { terms: { field: 'n', size: 4, missing: -5, order: [{ lo: 'desc' }, { _key: 'asc' }].slice(1) }, aggs: { tags: { terms: { field: 'tag', size: 2, min_doc_count: 2, exclude: ['g0'] } } } },
      ordered: { terms: { field: 'tag', size: 3, order: { 'avg_n': 'desc' } }, aggs: { avg_n: { avg: { field: 'n' } }, t: { terms: { field: 'tag' } } } },
      hist: { terms: { field: 'tag', size: 4 }, aggs: { h: { histogram: { field: 'n', interval: 150 } }, h1: { histogram: { field: 'n', interval: 40, min_doc_count: 2 } } } },
    };
    await es('POST', '/texts/_search', { size: 0, aggs }); // the plain-value check, cached by the table's LSN
    for (const query of [undefined, QUERIES[11], QUERIES[9], { bool: { filter: [{ range: { n: { gte: 300 } } }] } }]) {
      // the metrics node, per terms aggregation its grouped node, per terms child one windowed node, per histogram child one grouped node
      const planned = await asViewed(aggs, query, 10);
      expect(planned.aggregations.by_tag.buckets[0].ns.buckets.length).toBeGreaterThan(0);
    }
  }, 120_000);

  it('sub-aggregations of filter, filters, range and missing buckets run as a level of plans per bucket, global as a level over the index, equal to the aggregation code', async () => {
    const inner = { t: { terms: { field: 'tag', size: 3 }, aggs: { s: { sum: { field: 'n' } } } }, h: { histogram: { field: 'n', interval: 200 } }, a: { avg: { field: 'n' } } };
    const aggs = {
      f: { filter: { match: { title: 'gamma' } }, aggs: { ...inner, deeper: { filters: { filters: { lo: { range: { n: { lt: 300 } } } } }, aggs: { c: { value_count: { field: 'tag' } } } } } },
      fs: { filters: { other_bucket: true, filters: { x: { match_phrase: { body: 'river stone' } }, y: { term: { tag: 'g3' } } } }, aggs: inner },
      r: { range: { field: 'n', ranges: [{ to: 250 }, { from: 250, to: 700 }] }, aggs: { t: { terms: { field: 'tag', size: 2 } } } },
      m: { missing: { field: 'n' }, aggs: { t: { terms: { field: 'tag' } } } },
      all: { global: {}, aggs: { t: { terms: { field: 'tag', size: 2 } }, f: { filter: { match: { body: 'cloud' } } } } }, none: { global: {} },
    };
    await es('POST', '/texts/_search', { size: 0, aggs }); // the plain-value check, cached by the table's LSN
    // the top node; f: 3 (its level) + 1 (deeper's bucket); fs: 3 buckets × 3; r: 2 buckets × 1 and m: 1 (a terms
    // aggregation alone in a level is one plan); the globals over the index: 2 and 1
    for (const query of [undefined, QUERIES[4], QUERIES[16]]) await asViewed(aggs, query, 1 + 4 + 9 + 2 + 1 + 3);
  }, 120_000);

  it('the q parameter: folded into a query_string, its counts and aggregations run as plans', async () => {
    await es('POST', '/texts/_search', { size: 0, aggs: AGGS });
    for (const q of ['title:alpha AND tag:g1', 'river stone', 'body:"cloud forest" OR n:[* TO 100]']) {
      for (const extra of ['', '&default_operator=AND&df=body']) {
        const qs = `q=${encodeURIComponent(q)}${extra}`;
        const before = await plans();
        const planned = await es('POST', `/texts/_search?${qs}`, { size: 0, aggs: AGGS });
        const ran = (await plans()) - before;
        const viewed = await es('POST', `/texts/_search?${qs}`, { size: 0, aggs: AGGS, post_filter: { match_all: {} } });
        expect(planned.aggregations).toEqual(viewed.aggregations);
        expect(planned.hits.total).toEqual(viewed.hits.total);
        const c0 = await plans();
        const count = (await es('GET', `/texts/_count?${qs}`)).count;
        const counted = (await plans()) - c0;
        expect(count).toBe((await es('GET', `/texts/_count?${qs}&min_score=0`)).count);
        // a string range from the syntax is not a plan predicate: that query takes the scorer over the view
        if (!q.includes('[')) expect([qs, ran, counted]).toEqual([qs, 6, 1]);
        if (q === 'river stone' && !extra) expect(count).toBeGreaterThan(0); // every field (`*`): title, body, tag
      }
    }
  }, 120_000);

  it('an alias with a filter: its filter is one more clause of the plans\' query (aggregations, counts, sorted pages)', async () => {
    await es('POST', '/_aliases', { actions: [{ add: { index: 'texts', alias: 'g1s', filter: { term: { tag: 'g1' } } } }, { add: { index: 'texts', alias: 'alphas', filter: { match: { title: 'alpha' } } } }] });
    await es('POST', '/texts/_search', { size: 0, aggs: AGGS });
    for (const [alias, f] of [['g1s', { term: { tag: 'g1' } }], ['alphas', { match: { title: 'alpha' } }]] as const) {
      for (const query of [undefined, QUERIES[12], QUERIES[16]]) {
        const before = await plans();
        const planned = await es('POST', `/${alias}/_search`, { size: 0, aggs: AGGS, ...(query ? { query } : {}) });
        expect((await plans()) - before).toBe(6);
        const viewed = await es('POST', '/texts/_search', { size: 0, aggs: AGGS, query: { bool: { must: query ? [query] : [], filter: [f] } }, post_filter: { match_all: {} } });
        expect(planned.hits.total).toEqual(viewed.hits.total);
        expect(planned.aggregations).toEqual(viewed.aggregations);
        const c0 = await plans();
        expect((await es('POST', `/${alias}/_count`, query ? { query } : {})).count).toBe(viewed.hits.total.value);
        expect((await plans()) - c0).toBe(1);
        const page = { sort: [{ n: 'asc' }, { tag: 'desc' }], size: 7, ...(query ? { query } : {}) };
        const sp = await es('POST', `/${alias}/_search`, page);
        const sv = await es('POST', `/${alias}/_search`, { ...page, post_filter: { match_all: {} } });
        expect(sp.hits.hits.map((h: { _id: string }) => h._id)).toEqual(sv.hits.hits.map((h: { _id: string }) => h._id));
        expect(sp.hits.total).toEqual(sv.hits.total);
      }
      // global through a filtered alias: its documents are the alias's (a level of plans over the alias filter)
      const g = { all: { global: {}, aggs: { t: { terms: { field: 'tag' } } } } };
      expect((await es('POST', `/${alias}/_search`, { size: 0, aggs: g })).aggregations).toEqual((await es('POST', `/${alias}/_search`, { size: 0, aggs: g, post_filter: { match_all: {} } })).aggregations);
    }
  }, 120_000);

  it('a user under a row-level policy aggregates and counts only the rows it may read through these plans', async () => {
    const table = ((await srv.request('GET', `${T}/schemas`, { token: TOKEN })).json as string[]).find((x) => x.startsWith('es.i_texts_'))!;
    const owner = (method: string, p: string, body: unknown) => srv.request(method, `${T}${p}`, { token: TOKEN, body });
    expect((await owner('PUT', '/users/reader', { grants: { [table]: ['read'] } })).status).toBe(200);
    expect((await owner('PUT', '/policies/texts_visible', { schema: table, users: ['reader'], using: "_id NOT LIKE 'h%'" })).status).toBe(200);
    const token = (await owner('POST', '/users/reader/tokens', {})).json.token as string;
    const hidden = { prefix: { _id: 'h' } };
    for (const query of [QUERIES[4], QUERIES[6], QUERIES[11], QUERIES[15], QUERIES[18], QUERIES[10]]) {
      // the same plan path as the owner's (the first test shows these queries take it), under the reader's policy
      const before = await plans();
      const mine = await es('POST', '/texts/_search', { size: 0, query, aggs: AGGS }, token);
      expect((await plans()) - before).toBeGreaterThan(0);
      // the owner's answer without the hidden rows, from the scorer over the view
      const ref = await es('POST', '/texts/_search', { size: 0, query: { bool: { must: [query], must_not: [hidden] } }, aggs: AGGS, post_filter: { match_all: {} } });
      const all = await es('POST', '/texts/_search', { size: 0, query, aggs: AGGS });
      expect(mine.hits.total).toEqual(ref.hits.total);
      expect(mine.hits.total.value).toBeLessThan(all.hits.total.value);
      expect(mine.aggregations).toEqual(ref.aggregations);
      expect((await es('POST', '/texts/_count', { query }, token)).count).toBe(ref.hits.total.value);
      // sub-aggregations (window and grouped child nodes), terms options, filters of text queries
      const deep = { t: { terms: { field: 'tag', size: 3, missing: 'none', exclude: ['g6'] }, aggs: { n: { terms: { field: 'n', size: 2 } }, h: { histogram: { field: 'n', interval: 250 } }, f: { filters: { other_bucket: true, filters: { a: { match: { title: 'alpha' } } } } } } } };
      const d0 = await plans();
      const mineDeep = await es('POST', '/texts/_search', { size: 0, query, aggs: deep }, token);
      expect((await plans()) - d0).toBe(4);
      const refDeep = await es('POST', '/texts/_search', { size: 0, query: { bool: { must: [query], must_not: [hidden] } }, aggs: deep, post_filter: { match_all: {} } });
      expect(mineDeep.aggregations).toEqual(refDeep.aggregations);
      const page = await es('POST', '/texts/_search', { query, sort: [{ n: 'asc' }], size: 50 }, token);
      expect(page.hits.hits.some((h: { _id: string }) => h._id.startsWith('h'))).toBe(false);
    }
    // what stays code by design (suggesters, highlights, top_hits, percentiles) runs over rows read by a plan under the policy too
    await es('PUT', '/texts/_doc/hzebra', { title: 'zebras', body: 'zebras graze', tag: 'g1', n: 5000 });
    const body = { query: { match: { body: 'zebras' } }, highlight: { fields: { body: {} } }, suggest: { s: { text: 'zebraz', term: { field: 'body' } } },
      aggs: { top: { top_hits: { size: 3, sort: [{ n: 'desc' }] } }, p: { percentiles: { field: 'n', percents: [99] } } } };
    const seen = await es('POST', '/texts/_search', body);
    expect(seen.hits.hits.map((h: { _id: string }) => h._id)).toEqual(['hzebra']);
    expect(seen.suggest.s[0].options.map((o: { text: string }) => o.text)).toEqual(['zebras']);
    const hidden2 = await es('POST', '/texts/_search', body, token);
    expect([hidden2.hits.total.value, hidden2.suggest.s[0].options, hidden2.aggregations.top.hits.hits]).toEqual([0, [], []]);
    const all = await es('POST', '/texts/_search', { size: 0, aggs: { top: { top_hits: { size: 1, sort: [{ n: 'desc' }] } } } }, token);
    expect(all.aggregations.top.hits.hits[0]._id).not.toBe('hzebra');
    expect(JSON.stringify(await es('POST', '/texts/_search', { query: { match_all: {} }, size: 0, suggest: body.suggest }, token))).not.toContain('zebras');
  }, 120_000);
});
