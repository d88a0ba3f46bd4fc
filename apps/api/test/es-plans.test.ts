/**
 * The ES surface's reads through plans, over HTTPS against the built server:
 *  - a relevance page of a match query (alone or with bool filters) runs as a top-k fts_search
 *    plan (libs/es-compat/src/topk.ts); its hits, scores and totals equal the full scoring of the
 *    index (forced here with `sort: ["_score"]`, which the top-k plan does not take);
 *  - the cached index view follows writes made through the other surfaces at once: /rows, /sql.
 */
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;
const WORDS = 'alpha beta gamma delta river stone cloud forest ember harbor meadow signal'.split(' ');

describe('ES reads through plans', () => {
  let srv: TestServer;
  const es = async (method: string, p: string, body?: unknown) => {
    const r = await srv.request(method, `${T}/es${p}`, { token: TOKEN, ...(body === undefined ? {} : { body }) });
    if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${r.text}`);
    return r.json;
  };

  /** Plans the ES surface has run (the executor's latency count for surface "es"). */
  const plans = async () => Number(/db_query_latency_ms_count\{surface="es"\} (\d+)/.exec((await srv.request('GET', '/metrics')).text)?.[1] ?? 0);

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('a top-k plan answers match and bool pages exactly as scoring every document does', async () => {
    await es('PUT', '/topk', { mappings: { properties: { body: { type: 'text' }, tag: { type: 'keyword' }, n: { type: 'long' } } } });
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    const lines: string[] = [];
    for (let i = 0; i < 600; i++) {
      // short and long documents (norms are quantized from 24 tokens on), some tags as arrays, some n as text
      const len = i % 7 === 0 ? 30 + Math.floor(rnd() * 40) : 3 + Math.floor(rnd() * 10);
      const body = Array.from({ length: len }, () => WORDS[Math.floor(rnd() * WORDS.length)]).join(' ');
      const tag = i % 11 === 0 ? [`t${i % 5}`, 'extra'] : `t${i % 5}`;
      const n = i % 13 === 0 ? String(i % 100) : i % 100;
      lines.push(JSON.stringify({ index: { _index: 'topk', _id: `d${i}` } }), JSON.stringify({ body, tag, n }));
    }
    const bulk = await srv.request('POST', `${T}/es/_bulk`, { token: TOKEN, raw: lines.join('\n') + '\n', contentType: 'application/x-ndjson' });
    expect(bulk.json.errors).toBe(false);

    const queries: Array<Record<string, unknown>> = [
      { query: { match: { body: 'alpha' } } },
      { query: { match: { body: 'river stone' } }, size: 25 },
      { query: { match: { body: { query: 'ember harbor meadow', operator: 'and' } } }, from: 5, size: 10 },
      { query: { bool: { must: [{ match: { body: 'cloud forest' } }], filter: [{ range: { n: { gte: 20, lt: 60 } } }] } }, size: 15 },
      { query: { bool: { must: { match: { body: 'signal' } }, filter: [{ term: { tag: 't2' } }] } } },
      { query: { bool: { must: [{ match: { body: 'gamma delta' } }], filter: [{ terms: { tag: ['t1', 'extra'] } }], must_not: [{ range: { n: { lt: 10 } } }] } }, size: 30 },
      { query: { match: { body: 'beta' } }, track_total_hits: 50 },
      { query: { match: { body: 'beta river' } }, track_total_hits: true, size: 3 },
    ];
    for (const q of queries) {
      const fast = await es('POST', '/topk/_search', q);
      const full = await es('POST', '/topk/_search', { ...q, sort: ['_score'], track_scores: true });
      const scores = (r: { hits: { hits: Array<{ _score: number }> } }) => r.hits.hits.map((h) => h._score);
      expect(scores(fast)).toEqual(scores(full));
      expect(fast.hits.total).toEqual(full.hits.total);
      expect(fast.hits.max_score).toBe(full.hits.max_score);
      // every hit is a match with the score full scoring gives it
      const byId = new Map<string, number>();
      const all = await es('POST', '/topk/_search', { ...q, from: 0, size: 600, sort: ['_score'], track_scores: true });
      for (const h of all.hits.hits) byId.set(h._id, h._score);
      for (const h of fast.hits.hits) expect(byId.get(h._id)).toBe(h._score);
      expect(fast.hits.hits.length).toBe(full.hits.hits.length);
    }
  }, 120_000);

  it('a filter that passes only documents ranked past the fts node\'s limit still finds them', async () => {
    await es('PUT', '/deep', { mappings: { properties: { body: { type: 'text' }, n: { type: 'long' } } } });
    const lines: string[] = [];
    for (let i = 0; i < 1500; i++) {
      // the one document the filter passes is the longest: the lowest score of 1,500 holders of "common"
      const body = i === 1499 ? `common ${'filler '.repeat(20)}` : `common word${i % 7}`;
      lines.push(JSON.stringify({ index: { _index: 'deep', _id: `c${i}` } }), JSON.stringify({ body, n: i }));
    }
    expect((await srv.request('POST', `${T}/es/_bulk`, { token: TOKEN, raw: lines.join('\n') + '\n', contentType: 'application/x-ndjson' })).json.errors).toBe(false);
    const q = { query: { bool: { must: [{ match: { body: 'common' } }], filter: [{ range: { n: { gte: 1499 } } }] } } };
    const r = await es('POST', '/deep/_search', q);
    expect(r.hits.total).toEqual({ value: 1, relation: 'eq' });
    expect(r.hits.hits.map((h: { _id: string }) => h._id)).toEqual(['c1499']);
    expect(r.hits.hits[0]._score).toBe((await es('POST', '/deep/_search', { ...q, sort: ['_score'], track_scores: true })).hits.hits[0]._score);
  }, 60_000);

  it('terms and metric aggregations run as aggregate plans, equal to the aggregation code over the view', async () => {
    await es('PUT', '/aggp', { mappings: { properties: { tag: { type: 'keyword' }, n: { type: 'long' }, x: { type: 'double' }, body: { type: 'text' } } } });
    const lines: string[] = [];
    for (let i = 0; i < 300; i++) {
      const doc: Record<string, unknown> = { tag: `t${(i * 7) % 13}`, n: (i * 37) % 101 - 30, x: (i - 40) / 4, body: i % 2 ? 'odd' : 'even' };
      if (i % 17 === 0) delete doc.n;
      if (i % 19 === 0) delete doc.tag;
      lines.push(JSON.stringify({ index: { _index: 'aggp', _id: `a${i}` } }), JSON.stringify(doc));
    }
    expect((await srv.request('POST', `${T}/es/_bulk`, { token: TOKEN, raw: lines.join('\n') + '\n', contentType: 'application/x-ndjson' })).json.errors).toBe(false);
    const aggs = {
      tags: { terms: { field: 'tag', size: 5 } }, all_tags: { terms: { field: 'tag', size: 50 } },
      by_tag: { terms: { field: 'tag', size: 4 }, aggs: { avg_n: { avg: { field: 'n' } }, st: { stats: { field: 'n' } }, kinds: { cardinality: { field: 'n' } } } },
      c: { value_count: { field: 'n' } }, lo: { min: { field: 'n' } }, hi: { max: { field: 'n' } }, s: { sum: { field: 'n' } }, a: { avg: { field: 'n' } }, st: { stats: { field: 'n' } },
      r: { range: { field: 'n', ranges: [{ to: 20 }, { from: 20, to: 50.5 }, { from: 40, key: 'forty+' }] } }, rx: { range: { field: 'x', ranges: [{ from: 10.25, to: 30 }] } },
      h: { histogram: { field: 'n', interval: 10 } }, hx: { histogram: { field: 'x', interval: 7, min_doc_count: 1 } },
      tc: { value_count: { field: 'tag' } }, card: { cardinality: { field: 'tag' } }, ncard: { cardinality: { field: 'n' } },
      // terms order (by _key, _count, a metric sub-aggregation; ties by key), missing, filter, filters
      ord_key: { terms: { field: 'tag', size: 6, order: { _key: 'desc' } } }, ord_cnt: { terms: { field: 'tag', size: 6, order: { _count: 'asc' } } },
      ord_avg: { terms: { field: 'tag', size: 5, order: { avg_n: 'desc' } }, aggs: { avg_n: { avg: { field: 'n' } } } },
      ord_st: { terms: { field: 'tag', size: 5, order: [{ 'st.max': 'asc' }, { _count: 'desc' }] }, aggs: { st: { stats: { field: 'n' } } } },
      ord_card: { terms: { field: 'tag', size: 3, order: { k: 'asc' } }, aggs: { k: { cardinality: { field: 'n' } } } },
      nt: { terms: { field: 'n', size: 7 } }, nt_key: { terms: { field: 'n', size: 5, order: { _key: 'desc' } }, aggs: { c: { value_count: { field: 'tag' } } } },
      miss_n: { missing: { field: 'n' } }, miss_tag: { missing: { field: 'tag' } }, miss_x: { missing: { field: 'x' } },
      f1: { filter: { term: { tag: 't3' } } }, f2: { filter: { range: { n: { gte: 10 } } } }, f3: { filter: { match_all: {} } },
      fs: { filters: { filters: { b: { term: { tag: 't1' } }, a: { range: { x: { gte: 0 } } }, all: { match_all: {} } } } },
      fa: { filters: { filters: [{ term: { tag: 't2' } }, { bool: { filter: [{ range: { n: { lt: 5 } } }, { terms: { tag: ['t2', 't4'] } }] } }] } },
    };
    const queries: unknown[] = [undefined, { match_all: {} }, { bool: { filter: [{ range: { n: { gte: 10, lt: 70 } } }, { terms: { tag: ['t1', 't2', 't3', 't4'] } }] } },
      { bool: { filter: { range: { x: { lte: 30.5 } } } } }, { bool: { filter: [{ term: { tag: 'nope' } }] } }];
    for (const query of queries) {
      const body = { size: 0, aggs, ...(query ? { query } : {}) };
      const before = await plans();
      const planned = await es('POST', '/aggp/_search', body);
      expect(await plans()).toBeGreaterThan(before); // aggregate plans ran (the view is cached)
      const before2 = await plans();
      // post_filter keeps the view's aggregation code (it needs every match) and changes nothing here
      const viewed = await es('POST', '/aggp/_search', { ...body, post_filter: { match_all: {} } });
      expect(await plans()).toBe(before2);
      expect(planned.aggregations).toEqual(viewed.aggregations);
      expect(Object.keys(planned.aggregations.fs.buckets)).toEqual(['a', 'all', 'b']); // keyed filters by name, as Elasticsearch
      expect(planned.hits).toEqual(viewed.hits);
    }
    // under a text query: the aggregate nodes read an fts_search holding every match (as many plans
    // as without one: one per terms/histogram aggregation and the metrics), where the view path runs
    // one fts retrieval plan
    const texts: unknown[] = [{ match: { body: 'odd' } }, { match: { body: { query: 'even odd' } } }, { match: { body: { query: 'odd even', operator: 'and' } } },
      { bool: { must: [{ match: { body: 'even' } }], filter: [{ range: { n: { gte: 0, lt: 60 } } }, { terms: { tag: ['t1', 't2', 't5', 't7'] } }] } },
      { bool: { must: { match: { body: 'odd' } }, filter: { term: { tag: 'nope' } } } }, { match: { body: 'absent' } }];
    for (const query of texts) {
      const body = { size: 0, aggs, query };
      const before = await plans();
      const planned = await es('POST', '/aggp/_search', body);
      const ran = (await plans()) - before;
      const before2 = await plans();
      const viewed = await es('POST', '/aggp/_search', { ...body, post_filter: { match_all: {} } });
      expect(ran).toBeGreaterThanOrEqual(6);
      expect((await plans()) - before2).toBeLessThanOrEqual(1);
      expect(planned.aggregations).toEqual(viewed.aggregations);
      expect(planned.hits).toEqual(viewed.hits);
    }
    // values copied into a field (copy_to) are not under it in _source: the aggregation code answers
    await es('PUT', '/copied', { mappings: { properties: { a: { type: 'keyword', copy_to: 'b' }, b: { type: 'keyword' }, c: { type: 'text' } } } });
    await es('PUT', '/copied/_doc/1', { a: 'x', b: 'y', c: 'fox' });
    await es('PUT', '/copied/_doc/2', { a: 'x', c: 'fox fox' });
    const cq = { size: 0, query: { bool: { filter: [{ term: { b: 'x' } }] } }, aggs: { b: { terms: { field: 'b' } } } };
    const cv = await es('POST', '/copied/_search', { ...cq, post_filter: { match_all: {} } });
    expect(cv.aggregations.b.buckets).toEqual([{ key: 'x', doc_count: 2 }, { key: 'y', doc_count: 1 }]);
    expect((await es('POST', '/copied/_search', cq)).aggregations).toEqual(cv.aggregations);
    const tk = await es('POST', '/copied/_search', { query: { bool: { must: [{ match: { c: 'fox' } }], filter: [{ term: { b: 'x' } }] } } });
    expect(tk.hits.hits.map((h: { _id: string }) => h._id)).toEqual(['2', '1']);

    // an array value is not one SQL value: the aggregation code over the view answers (each value counted)
    await es('PUT', '/aggp/_doc/arr', { tag: ['t1', 't2'], n: [1, 2] });
    const r = await es('POST', '/aggp/_search', { size: 0, aggs: { tags: { terms: { field: 'tag', size: 50 } }, c: { value_count: { field: 'n' } } } });
    const v = await es('POST', '/aggp/_search', { size: 0, post_filter: { match_all: {} }, aggs: { tags: { terms: { field: 'tag', size: 50 } }, c: { value_count: { field: 'n' } } } });
    expect(r.aggregations).toEqual(v.aggregations);
  }, 60_000);

  it('date_histogram over UTC timestamp strings runs as aggregate plans, equal to the aggregation code', async () => {
    await es('PUT', '/dates', { mappings: { properties: { at: { type: 'date' }, body: { type: 'text' }, n: { type: 'long' } } } });
    const lines: string[] = [];
    const pad = (x: number, w = 2) => String(x).padStart(w, '0');
    for (let i = 0; i < 300; i++) {
      // from 1968 to 1972 and around 2020, every shape the plans read
      const t = (i % 2 ? Date.UTC(1968, 0, 1) : Date.UTC(2019, 10, 1)) + i * 1_234_567_891 % (4 * 365 * 86400000) + (i % 7) * 123;
      const d = new Date(t);
      const day = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
      const time = `T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
      const at = i % 3 === 0 ? day : i % 3 === 1 ? `${day}${time}Z` : `${day}${time}.${pad(d.getUTCMilliseconds(), 3)}Z`;
      const doc: Record<string, unknown> = { at, body: i % 2 ? 'odd' : 'even', n: i };
      if (i % 23 === 0) delete doc.at;
      if (i % 29 === 0) doc.at = null;
      lines.push(JSON.stringify({ index: { _index: 'dates', _id: `d${i}` } }), JSON.stringify(doc));
    }
    expect((await srv.request('POST', `${T}/es/_bulk`, { token: TOKEN, raw: lines.join('\n') + '\n', contentType: 'application/x-ndjson' })).json.errors).toBe(false);
    const aggs: Record<string, unknown> = {};
    for (const c of ['year', '1q', 'month', '1w']) aggs[`c_${c}`] = { date_histogram: { field: 'at', calendar_interval: c } };
    for (const c of ['day', '1h', 'minute']) aggs[`c_${c}`] = { date_histogram: { field: 'at', calendar_interval: c, min_doc_count: 1 } }; // 56 years of them
    for (const f of ['90m', '7d', '1d', '45s']) aggs[`f_${f}`] = { date_histogram: { field: 'at', fixed_interval: f, min_doc_count: 1 } };
    aggs.sparse = { date_histogram: { field: 'at', calendar_interval: 'month', min_doc_count: 2 } };
    // under terms: one grouped node over the parent key and the bucket key
    aggs.by_n = { terms: { field: 'n', size: 4, order: { _key: 'asc' } }, aggs: { y: { date_histogram: { field: 'at', calendar_interval: 'year' } }, d: { date_histogram: { field: 'at', fixed_interval: '7d', min_doc_count: 1 } } } };
    for (const query of [undefined, { match: { body: 'odd' } }, { bool: { filter: [{ range: { n: { lt: 150 } } }] } }]) {
      const body = { size: 0, aggs, ...(query ? { query } : {}) };
      const before = await plans();
      const planned = await es('POST', '/dates/_search', body);
      expect((await plans()) - before).toBeGreaterThanOrEqual(Object.keys(aggs).length);
      const viewed = await es('POST', '/dates/_search', { ...body, post_filter: { match_all: {} } });
      expect(planned.aggregations).toEqual(viewed.aggregations);
    }
    // a value of another shape (epoch millis) takes the aggregation code, still right
    await es('PUT', '/dates/_doc/epoch', { at: 86400000 * 3, body: 'odd', n: 1 });
    const body = { size: 0, aggs: { m: { date_histogram: { field: 'at', calendar_interval: 'year' } } } };
    expect((await es('POST', '/dates/_search', body)).aggregations).toEqual((await es('POST', '/dates/_search', { ...body, post_filter: { match_all: {} } })).aggregations);
  }, 60_000);

  it('aggregations under a text query matching thousands of documents run over fts_search(limit null), equal to the aggregation code', async () => {
    await es('PUT', '/manyagg', { mappings: { properties: { body: { type: 'text' }, tag: { type: 'keyword' }, n: { type: 'long' } } } });
    const lines: string[] = [];
    let seed = 11;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 2500; i++) {
      const body = Array.from({ length: 3 + Math.floor(rnd() * 6) }, () => WORDS[Math.floor(rnd() * 4)]).join(' ');
      lines.push(JSON.stringify({ index: { _index: 'manyagg', _id: `m${i}` } }), JSON.stringify({ body, tag: `g${i % 23}`, n: i % 1000 }));
    }
    expect((await srv.request('POST', `${T}/es/_bulk`, { token: TOKEN, raw: lines.join('\n') + '\n', contentType: 'application/x-ndjson' })).json.errors).toBe(false);
    const aggs = { tags: { terms: { field: 'tag', size: 20 } }, s: { stats: { field: 'n' } }, h: { histogram: { field: 'n', interval: 100 } } };
    const queries = [{ match: { body: 'alpha' } }, { match: { body: { query: 'beta gamma', operator: 'and' } } },
      { bool: { filter: [{ range: { n: { lt: 550 } } }], must: [{ match: { body: 'delta' } }] } }];
    for (const query of queries) {
      const before = await plans();
      const planned = await es('POST', '/manyagg/_search', { size: 0, query, aggs });
      expect((await plans()) - before).toBeGreaterThanOrEqual(3); // the metrics, terms and histogram nodes
      const before2 = await plans();
      const viewed = await es('POST', '/manyagg/_search', { size: 0, query, aggs, post_filter: { match_all: {} } });
      expect((await plans()) - before2).toBeLessThanOrEqual(1); // the view path: one fts retrieval plan
      expect(planned.hits.total).toEqual(viewed.hits.total);
      expect(viewed.hits.total.value).toBeGreaterThan(1000); // past the bounded node's 1,000
      expect(planned.aggregations).toEqual(viewed.aggregations);
    }
    // a bool of match clauses on one field: one structured fts query with Elasticsearch's bool meaning
    const bools = [{ bool: { must: [{ match: { body: 'alpha' } }], must_not: [{ match: { body: 'beta' } }] } },
      { bool: { should: [{ match: { body: 'alpha' } }, { match: { body: 'gamma' } }], minimum_should_match: 2 } },
      { bool: { must: { match: { body: 'delta' } }, should: [{ match: { body: 'alpha' } }], filter: [{ range: { n: { lt: 700 } } }] } },
      { bool: { should: [{ match: { body: 'alpha beta' } }, { match: { body: { query: 'gamma delta', operator: 'and' } } }], must_not: { match: { body: 'alpha' } } } }];
    for (const query of bools) {
      const before = await plans();
      const planned = await es('POST', '/manyagg/_search', { size: 0, query, aggs });
      expect((await plans()) - before).toBe(3); // the metrics, terms and histogram nodes (the values' check is cached)
      const viewed = await es('POST', '/manyagg/_search', { size: 0, query, aggs, post_filter: { match_all: {} } });
      expect(planned.hits.total).toEqual(viewed.hits.total);
      expect(viewed.hits.total.value).toBeGreaterThan(0);
      expect(planned.aggregations).toEqual(viewed.aggregations);
      expect((await es('POST', '/manyagg/_count', { query })).count).toBe((await es('POST', '/manyagg/_count?min_score=0', { query })).count);
    }
  }, 60_000);

  it('a page sorted by fields runs as sort and limit plan nodes, equal to the full search', async () => {
    await es('PUT', '/sorted', { mappings: { properties: { body: { type: 'text' }, tag: { type: 'keyword' }, n: { type: 'long' }, x: { type: 'double' } } } });
    const lines: string[] = [];
    for (let i = 0; i < 400; i++) {
      const doc: Record<string, unknown> = { body: `${WORDS[i % 5]} ${WORDS[(i * 3) % 7]}`, tag: `t${(i * 7) % 11}`, n: (i * 37) % 53, x: ((i * 13) % 29) / 4 };
      if (i % 13 === 0) delete doc.n;
      if (i % 17 === 0) doc.tag = null;
      lines.push(JSON.stringify({ index: { _index: 'sorted', _id: `s${i}` } }), JSON.stringify(doc));
    }
    expect((await srv.request('POST', `${T}/es/_bulk`, { token: TOKEN, raw: lines.join('\n') + '\n', contentType: 'application/x-ndjson' })).json.errors).toBe(false);
    const sorts: unknown[] = [[{ n: 'asc' }], [{ n: 'desc' }, { tag: 'asc' }], ['tag'], [{ x: { order: 'desc' } }, 'n'], { tag: 'desc' },
      [{ n: { order: 'desc', missing: '_first' } }], [{ tag: { missing: '_first' } }, { n: { order: 'asc', missing: '_last' } }]];
    const queries: unknown[] = [undefined, { bool: { filter: [{ range: { n: { gte: 5, lt: 40 } } }] } }, { match: { body: 'alpha river' } },
      { bool: { must: [{ match: { body: 'gamma' } }], filter: [{ terms: { tag: ['t1', 't2', 't3'] } }] } },
      { bool: { should: [{ match: { body: 'alpha' } }, { match: { body: 'river' } }], must_not: { match: { body: 'beta' } } } }];
    const pages = [{ size: 10 }, { from: 7, size: 25 }, { size: 300, track_total_hits: true }, { size: 3, version: true, seq_no_primary_term: true, _source: ['n'] }];
    const check = async () => {
      for (const sort of sorts) for (const query of queries) for (const page of pages) {
        const body = { ...page, sort, ...(query ? { query } : {}) };
        const before = await plans();
        const planned = await es('POST', '/sorted/_search', body);
        expect((await plans()) - before).toBeGreaterThanOrEqual(2); // the count and the page
        const viewed = await es('POST', '/sorted/_search', { ...body, post_filter: { match_all: {} } });
        expect(planned.hits).toEqual(viewed.hits);
      }
      // _count: one aggregate count plan (min_score=0 takes the view's scoring, and changes nothing here)
      for (const query of [...queries, { match_all: {} }, { bool: { filter: { term: { tag: 't4' } } } }]) {
        const body = query ? { query } : undefined;
        const before = await plans();
        const planned = await es('POST', '/sorted/_count', body);
        const ran = (await plans()) - before;
        const before2 = await plans();
        const viewed = await es('POST', '/sorted/_count?min_score=0', body);
        expect(ran).toBe(1); // one aggregate count (the values' check is cached)
        // the view's scoring runs no plan (fts retrievals for matches)
        if (!JSON.stringify(query ?? {}).includes('"match"')) expect((await plans()) - before2).toBe(0);
        expect(planned.count).toBe(viewed.count);
      }
    };
    await check();
    // documents written by this surface after the view was cached (ties ordered by _seq_no)
    await es('PUT', '/sorted/_doc/late1', { body: 'alpha', tag: 't1', n: 5, x: 1 });
    await es('PUT', '/sorted/_doc/s3', { body: 'gamma river', tag: 't2', n: 5, x: 1 });
    await check();
  }, 120_000);

  it('the cached view of an index follows writes through /rows and /sql at once (same frame)', async () => {
    await es('PUT', '/fresh', { mappings: { properties: { title: { type: 'text' }, n: { type: 'long' } } } });
    await es('PUT', '/fresh/_doc/1?refresh=true', { title: 'first light', n: 1 });
    expect((await es('POST', '/fresh/_search', { query: { match_all: {} } })).hits.total.value).toBe(1); // the view is cached now
    const ids = (await srv.request('GET', `${T}/schemas`, { token: TOKEN })).json as string[];
    const table = ids.find((x) => x.startsWith('es.i_fresh_'))!;
    const cols = (await srv.request('POST', `${T}/sql`, { token: TOKEN, body: { sql: `SELECT * FROM ${table}` } })).json.rows[0];
    const textCol = Object.keys(cols).find((c) => /^t\d+_title$/.test(c))!;

    // /rows: a new row of the index's table is a document of the next search, get and count
    const row = { _id: '2', _source: JSON.stringify({ title: 'second wind', n: 2 }), _version: 1, _seq_no: 1, _primary_term: 1, [textCol]: 'second wind' };
    expect((await srv.request('POST', `${T}/rows/${table}`, { token: TOKEN, body: row })).status).toBe(200);
    expect((await es('POST', '/fresh/_count', { query: { range: { n: { gte: 2 } } } })).count).toBe(1);
    expect((await es('GET', '/fresh/_doc/2'))._source).toEqual({ title: 'second wind', n: 2 });
    expect((await es('POST', '/fresh/_search', { query: { match: { title: 'wind' } } })).hits.hits.map((h: { _id: string }) => h._id)).toEqual(['2']);

    // /sql: an UPDATE is seen by the next aggregation; a row DELETE by the next search
    const up = await srv.request('POST', `${T}/sql`, { token: TOKEN, body: { sql: `UPDATE ${table} SET _source = '{"title":"first light","n":40}' WHERE _id = '1'` } });
    expect(up.status).toBe(200);
    const agg = await es('POST', '/fresh/_search', { size: 0, aggs: { s: { sum: { field: 'n' } } } });
    expect(agg.aggregations.s.value).toBe(42);
    // (a SQL DELETE is translated, not run: the row route deletes)
    expect((await srv.request('DELETE', `${T}/rows/${table}/2`, { token: TOKEN })).json).toEqual({ deleted: true });
    expect((await srv.request('POST', `${T}/sql`, { token: TOKEN, body: { sql: `SELECT count(*) AS c FROM ${table}` } })).json.rows).toEqual([{ c: 1 }]);
    const after = await es('POST', '/fresh/_search', { query: { match_all: {} } });
    expect(after.hits.hits.map((h: { _id: string; _source: unknown }) => [h._id, h._source])).toEqual([['1', { title: 'first light', n: 40 }]]);
  }, 60_000);

  it('writes through /rows racing this surface\'s own writes are never lost from the view', async () => {
    await es('PUT', '/race', { mappings: { properties: { n: { type: 'long' } } } });
    await es('PUT', '/race/_doc/seed', { n: 0 });
    const ids = (await srv.request('GET', `${T}/schemas`, { token: TOKEN })).json as string[];
    const table = ids.find((x) => x.startsWith('es.i_race_'))!;
    for (let i = 0; i < 25; i++) {
      expect((await es('POST', '/race/_count')).count).toBe(1 + 2 * i); // the view is current and cached
      const row = { _id: `r${i}`, _source: { n: i }, _version: 1, _seq_no: 1000 + i, _primary_term: 1 };
      const [a] = await Promise.all([
        srv.request('POST', `${T}/rows/${table}`, { token: TOKEN, body: row }),
        es('PUT', `/race/_doc/e${i}`, { n: i }),
      ]);
      expect(a.status).toBe(200);
      const sql = (await srv.request('POST', `${T}/sql`, { token: TOKEN, body: { sql: `SELECT count(*) AS c FROM ${table}` } })).json.rows[0].c;
      expect(sql).toBe(3 + 2 * i);
      expect((await es('POST', '/race/_count')).count).toBe(sql);
    }
  }, 60_000);

  it('an ES write checked by if_seq_no or op_type=create racing a /rows write of the same document answers 409, never overwrites it', async () => {
    await es('PUT', '/occ', { mappings: { properties: { n: { type: 'long' } } } });
    const ids = (await srv.request('GET', `${T}/schemas`, { token: TOKEN })).json as string[];
    const table = ids.find((x) => x.startsWith('es.i_occ_'))!;
    const outcomes = { conflict: 0, esFirst: 0 };
    for (let i = 0; i < 25; i++) {
      const put = await es('PUT', `/occ/_doc/d${i}`, { n: -1 });
      expect((await es('GET', `/occ/_doc/d${i}`))._seq_no).toBe(put._seq_no); // the view is current and cached
      // another seq_no than the ES write's check names (a racing writer's change)
      const row = { _id: `d${i}`, _source: { n: 1000 + i }, _version: 7, _seq_no: put._seq_no + 100_000, _primary_term: 1 };
      const create = i % 5 === 4;
      if (create) await srv.request('DELETE', `${T}/rows/${table}/d${i}`, { token: TOKEN });
      const [a, b] = await Promise.all([
        srv.request('POST', `${T}/rows/${table}`, { token: TOKEN, body: row }),
        srv.request('PUT', create ? `${T}/es/occ/_create/d${i}` : `${T}/es/occ/_doc/d${i}?if_seq_no=${put._seq_no}&if_primary_term=1`, { token: TOKEN, body: { n: i } }),
      ]);
      expect(a.status).toBe(200);
      const after = await es('GET', `/occ/_doc/d${i}`);
      if (b.status === 409) {
        // the /rows write committed first: the ES check saw it
        expect(b.json.error.type).toBe('version_conflict_engine_exception');
        expect(after._source).toEqual({ n: 1000 + i });
        outcomes.conflict++;
      } else {
        // the ES write committed first: the /rows write (unconditional) came after it and stays
        expect(b.status).toBe(create ? 201 : 200);
        expect(after._source).toEqual({ n: 1000 + i });
        outcomes.esFirst++;
      }
    }
    expect(outcomes.conflict + outcomes.esFirst).toBe(25);
  }, 60_000);

  it('the cached view follows a migration: its cutover frame is seen by the next search and get', async () => {
    await es('PUT', '/migr', { mappings: { properties: { title: { type: 'text' } } } });
    for (let i = 0; i < 5; i++) await es('PUT', `/migr/_doc/${i}`, { title: `doc ${i}` });
    const seqs = async () => (await es('POST', '/migr/_search', { query: { match: { title: 'doc' } }, seq_no_primary_term: true, size: 5 })).hits.hits.map((h: { _id: string; _seq_no: number }) => [h._id, h._seq_no]).sort();
    expect(await seqs()).toEqual([['0', 0], ['1', 1], ['2', 2], ['3', 3], ['4', 4]]); // cached
    const ids = (await srv.request('GET', `${T}/schemas`, { token: TOKEN })).json as string[];
    const table = ids.find((x) => x.startsWith('es.i_migr_'))!;
    const m = await srv.request('POST', `${T}/migrations`, { token: TOKEN, body: { schema: table, operations: [{ op: 'change_type', column: '_seq_no', ty: 'f64', using: '_seq_no + 100' }], auto_cutover: true } });
    expect(m.status).toBe(201);
    let state = '';
    for (let i = 0; i < 300 && !['Completed', 'Failed'].includes(state); i++) {
      await new Promise((r) => setTimeout(r, 50));
      state = (await srv.request('GET', `${T}/migrations/${m.json.id}`, { token: TOKEN })).json.state;
    }
    expect(state).toBe('Completed');
    expect(await seqs()).toEqual([['0', 100], ['1', 101], ['2', 102], ['3', 103], ['4', 104]]);
    expect((await es('GET', '/migr/_doc/3'))._seq_no).toBe(103);
  }, 60_000);
});
