/**
 * Relevance pages of bool / multi_match / dis_max / query_string queries over text matches and term-level clauses
 * as fts_search plans (libs/es-compat topk-scored.ts), differentially on the real server: random
 * queries (fast-check) over an index of short and long documents (`min_score` and `rescore` too,
 * also on a lone `match`), each page's hits, order, scores,
 * `max_score` and total equal to the scorer's over every document (the same search with a
 * `post_filter`, which the plans do not take); also under a row-level policy. ES_SCORE_SEED
 * draws another set of pages.
 */
import fc from 'fast-check';
import { EsPlanCheck, suiteServer } from './es-plan-check';

type Json = any;
const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'river', 'stone', 'cloud', 'ember', 'harbor', 'meadow', 'signal', 'forest'];
const MAPPING = { properties: { title: { type: 'text' }, body: { type: 'text' }, tag: { type: 'keyword' }, n: { type: 'long' } } };

const words = fc.uniqueArray(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 3 }).map((w) => w.join(' '));
const boost = fc.constantFrom(undefined, 0.5, 3);
const match = fc.record({ f: fc.constantFrom('title', 'body'), q: words, op: fc.constantFrom('or', 'and'), boost, msm: fc.constantFrom<Json>(undefined, undefined, 2, '60%', -1) })
  .map(({ f, q, op, boost: b, msm }) => ({ match: { [f]: { query: q, operator: op, ...(b ? { boost: b } : {}), ...(msm !== undefined && op === 'or' ? { minimum_should_match: msm } : {}) } } }));
const multi = fc.record({ q: words, type: fc.constantFrom('best_fields', 'most_fields'), tie: fc.constantFrom(0, 0.4), fields: fc.constantFrom(['title^2', 'body'], ['title', 'body^1.5']) })
  .map(({ q, type, tie, fields }) => ({ multi_match: { query: q, fields, type, tie_breaker: tie } }));
const termLevel = fc.constantFrom<Json>({ term: { tag: 't1' } }, { range: { n: { gte: 20, lt: 70 } } }, { exists: { field: 'title' } }, { terms: { tag: ['t2', 't3'] } }, { constant_score: { filter: { term: { tag: 't4' } }, boost: 2 } });
const scoring = fc.oneof({ weight: 3, arbitrary: match }, { weight: 2, arbitrary: multi }, termLevel);
const bool = fc.record({
  must: fc.array(scoring, { maxLength: 2 }), should: fc.array(scoring, { maxLength: 3 }), filter: fc.array(termLevel, { maxLength: 1 }), must_not: fc.array(termLevel, { maxLength: 1 }), minimum_should_match: fc.constantFrom(undefined, 1),
}).map((b) => ({ bool: Object.fromEntries(Object.entries(b).filter(([, v]) => v !== undefined && (!Array.isArray(v) || v.length))) }));
const qs = fc.record({ a: fc.constantFrom(...WORDS), op: fc.constantFrom(' AND ', ' OR ', ' ', ' -', ' +'), b: words, kind: fc.constantFrom('query_string', 'simple_query_string'), fields: fc.constantFrom(['body'], ['title^2', 'body']), and: fc.boolean() })
  .map(({ a, op, b, kind, fields, and }) => ({ [kind]: { query: kind === 'simple_query_string' ? `${a}${op.replace(' AND ', ' +').replace(' OR ', ' | ')}${b}` : `${a}${op}${b}`, fields, ...(and ? { default_operator: 'and' } : {}) } }));
// a bool whose one scoring clause is a match is topk.ts's page (ties by _id there, a documented difference): left out
const lone = (q: Json): boolean => !!q.bool && Object.keys(q.bool).every((k) => ['must', 'filter', 'must_not'].includes(k)) && q.bool.must?.length === 1 && !!q.bool.must[0].match;
const query = fc.oneof(multi, bool, qs, fc.array(match, { minLength: 2, maxLength: 3 }).map((x) => ({ dis_max: { queries: x, tie_breaker: 0.2 } }))).filter((q) => !lone(q));
const rescore = fc.constantFrom<Json>(undefined, undefined, { window_size: 5, query: { rescore_query: { match: { title: 'alpha beta' } }, query_weight: 0.7, rescore_query_weight: 1.5 } },
  [{ window_size: 3, query: { rescore_query: { term: { tag: 't1' } }, score_mode: 'multiply' } }, { window_size: 30, query: { rescore_query: { match: { body: 'river' } }, score_mode: 'max' } }]);
// shaped per hit of the page
const shape = fc.constantFrom<Json>({}, {}, { highlight: { fields: { body: {}, title: {} } } }, { explain: true }, { docvalue_fields: ['n', 'tag'], _source: false }, { fields: ['tag'], version: true });
// collapse: the best hit of each value (not with rescore, which Elasticsearch refuses beside it)
const collapse = fc.constantFrom<Json>(undefined, undefined, { field: 'tag' }, { field: 'n' });
const pageOf = (q: fc.Arbitrary<Json>, min: fc.Arbitrary<number | undefined>) => fc.record({ query: q, from: fc.constantFrom(0, 3), size: fc.constantFrom(5, 20), track: fc.constantFrom<Json>(undefined, true, false, 40), min, rescore, shape, collapse })
  .map(({ query: x, from, size, track, min: m, rescore: r, shape: sh, collapse: cl }) => ({
    query: x, from, size, ...(track === undefined ? {} : { track_total_hits: track }), ...(m === undefined ? {} : { min_score: m }),
    ...(cl !== undefined ? { collapse: cl } : r !== undefined ? { rescore: r } : {}), ...sh,
  }));
// a lone match without min_score is topk.ts's page (ties by _id there, a documented difference): here with min_score only
const page = fc.oneof(pageOf(query, fc.constantFrom(undefined, undefined, 1, 4)), pageOf(match, fc.constantFrom(0.5, 1.5, 4)));

describe('ES relevance pages of scored queries as plans', () => {
  const server = suiteServer();

  it('random bool / multi_match / dis_max pages equal the scorer over every document, also under a policy', async () => {
    let seed = 11;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    const text = (len: number) => Array.from({ length: len }, () => WORDS[Math.floor(rnd() * WORDS.length)]).join(' ');
    const docs: Array<[string, Record<string, unknown>]> = [];
    for (let i = 0; i < 400; i++) {
      // short and long bodies (norms are quantized from 24 tokens on); some documents without a title
      const d: Record<string, unknown> = { body: text(i % 6 === 0 ? 25 + Math.floor(rnd() * 40) : 2 + Math.floor(rnd() * 9)), tag: `t${i % 5}`, n: i % 100 };
      if (i % 4) d.title = text(1 + Math.floor(rnd() * 4));
      docs.push([`${i % 9 === 0 ? 'h' : 'd'}${i}`, d]);
    }
    const c = await EsPlanCheck.fresh(server(), 'scored', MAPPING, docs, { t: { terms: { field: 'tag' } } });
    const reader = await c.reader('scored_reader');
    const hits = (r: Json) => r.hits.hits.map((h: Json) => [h._id, h._score]);
    const same = async (body: Json, token?: string) => {
      const fast = await c.es('POST', '/scored/_search', body, token);
      const full = await c.es('POST', '/scored/_search', { ...body, post_filter: { match_all: {} } }, token);
      expect([body, hits(fast), fast.hits.total, fast.hits.max_score]).toEqual([body, hits(full), full.hits.total, full.hits.max_score]);
      // every hit shaped alike (highlight, explanation, fields)
      expect([body, fast.hits.hits]).toEqual([body, full.hits.hits]);
    };
    await fc.assert(fc.asyncProperty(page, async (body) => {
      await same(body);
    }), { numRuns: 80, seed: Number(process.env.ES_SCORE_SEED ?? 5) });
    await fc.assert(fc.asyncProperty(page, async (body) => {
      await same(body, reader);
    }), { numRuns: 20, seed: 6 });
    // through a filtered alias: its filter one more clause, scored over the whole index as a shard scores it
    await c.es('POST', '/_aliases', { actions: [{ add: { index: 'scored', alias: 'scored_t1', filter: { terms: { tag: ['t1', 't2'] } } } }] });
    await fc.assert(fc.asyncProperty(page, async (body) => {
      const fast = await c.es('POST', '/scored_t1/_search', body);
      const full = await c.es('POST', '/scored_t1/_search', { ...body, post_filter: { match_all: {} } });
      expect([body, fast.hits.hits, fast.hits.total, fast.hits.max_score]).toEqual([body, full.hits.hits, full.hits.total, full.hits.max_score]);
    }), { numRuns: 30, seed: 7 });
  }, 300_000);

  it('a relevance page of several indices merges each index\'s top-k plans as the scorer ranks them', async () => {
    let seed = 3;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    const text = (len: number) => Array.from({ length: len }, () => WORDS[Math.floor(rnd() * WORDS.length)]).join(' ');
    for (const [name, count] of [['many_b', 150], ['many_a', 90]] as const) {
      const docs = Array.from({ length: count }, (_, i): [string, Record<string, unknown>] => [`d${i}`, { title: text(1 + (i % 3)), body: text(i % 5 === 0 ? 30 : 3 + (i % 7)), tag: `t${i % 5}`, n: i % 100 }]);
      await EsPlanCheck.fresh(server(), name, MAPPING, docs, { t: { terms: { field: 'tag' } } });
    }
    const c = new EsPlanCheck(server(), 'many_a');
    await fc.assert(fc.asyncProperty(pageOf(query, fc.constantFrom(undefined, 2)), fc.constantFrom('many_a,many_b', 'many_*'), fc.constantFrom<Json>(undefined, [{ many_a: 1.5 }], { many_b: 0.5 }), async (page, target, boosts) => {
      const body = boosts === undefined ? page : { ...page, indices_boost: boosts };
      const fast = await c.es('POST', `/${target}/_search`, body);
      const full = await c.es('POST', `/${target}/_search`, { ...body, post_filter: { match_all: {} } });
      const hitsOf = (r: Json) => r.hits.hits.map((h: Json) => [h._index, h._id, h._score]);
      expect([body, hitsOf(fast), fast.hits.total, fast.hits.max_score, fast._shards.total]).toEqual([body, hitsOf(full), full.hits.total, full.hits.max_score, full._shards.total]);
    }), { numRuns: 40, seed: 9 });
    // one of them through a filtered alias: its filter one more clause, its page scored over the whole index
    await c.es('POST', '/_aliases', { actions: [{ add: { index: 'many_b', alias: 'many_b_low', filter: { range: { n: { lt: 50 } } } } }] });
    await fc.assert(fc.asyncProperty(pageOf(query, fc.constantFrom(undefined, 2)), async (body) => {
      const fast = await c.es('POST', '/many_a,many_b_low/_search', body);
      const full = await c.es('POST', '/many_a,many_b_low/_search', { ...body, post_filter: { match_all: {} } });
      expect([body, fast.hits.hits, fast.hits.total, fast.hits.max_score]).toEqual([body, full.hits.hits, full.hits.total, full.hits.max_score]);
    }), { numRuns: 25, seed: 10 });
    // sorted by fields: each index's sort plans, their union sorted as every hit would be
    const both = new EsPlanCheck(server(), 'many_a,many_b');
    for (const query of [undefined, { term: { tag: 't2' } }, { match: { body: 'alpha' } }]) {
      for (const page of [{ sort: [{ n: 'desc' }, { tag: 'asc' }], size: 7, from: 2 }, { sort: [{ tag: 'asc' }, '_doc'], size: 12 }]) {
        const body = { ...(query ? { query } : {}), ...page };
        const fast = await both.counted(body);
        const full = await c.es('POST', '/many_a,many_b/_search', { ...body, post_filter: { match_all: {} } });
        const shown = (x: Json) => [x.hits.total, x.hits.hits.map((h: Json) => [h._index, h._id, h.sort])];
        expect([body, fast.ran >= 4, shown(fast.r)]).toEqual([body, true, shown(full)]);
        const lowFast = await c.es('POST', '/many_a,many_b_low/_search', body);
        const lowFull = await c.es('POST', '/many_a,many_b_low/_search', { ...body, post_filter: { match_all: {} } });
        expect([body, shown(lowFast)]).toEqual([body, shown(lowFull)]);
      }
    }
  }, 120_000);

  it('runs fts_search plans where the scorer would read the whole view', async () => {
    // terms held by more than 1,000 documents: the scorer's retrieval does not narrow them (no plan);
    // the top-k plans read one fts_search node per match, k rows each
    const docs = Array.from({ length: 1100 }, (_, i): [string, Record<string, unknown>] => [`d${i}`, { title: `beta ${WORDS[i % 12]}`, body: `alpha ${WORDS[i % 7]} ${'gamma '.repeat(i % 13)}`, tag: `t${i % 3}`, n: i }]);
    const c = await EsPlanCheck.fresh(server(), 'scored2', MAPPING, docs, { t: { terms: { field: 'tag' } } });
    for (const query of [
      { bool: { must: [{ match: { body: 'alpha' } }], should: [{ match: { title: 'beta river' } }, { term: { tag: 't1' } }] } },
      { multi_match: { query: 'alpha beta', fields: ['title^2', 'body'], type: 'most_fields' } },
      // filters pushed into the nodes: a common one, and one only documents ranked past the node's 1,000 pass
      { bool: { must: [{ match: { body: 'alpha gamma' } }, { match: { title: 'beta' } }], filter: [{ term: { tag: 't1' } }] } },
      { bool: { should: [{ match: { body: 'alpha' } }, { match: { title: 'beta' } }], filter: [{ range: { n: { gte: 1090 } } }] } },
    ]) {
      const body = { query, size: 5 };
      await c.es('POST', '/scored2/_search', { ...body, post_filter: { match_all: {} } });
      const full = await c.counted({ ...body, post_filter: { match_all: {} } });
      const fast = await c.counted(body);
      expect([query, full.ran]).toEqual([query, 0]);
      expect([query, fast.ran >= 2]).toEqual([query, true]);
      expect([query, hits(fast.r), fast.r.hits.total]).toEqual([query, hits(full.r), full.r.hits.total]);
    }
  }, 60_000);

  it('terminate_after: each index counts at most that many matches in index order (a plan for _count) and says whether it stopped', async () => {
    const c = await EsPlanCheck.fresh(server(), 'term', MAPPING, Array.from({ length: 30 }, (_, i): [string, Record<string, unknown>] => [`d${i}`, { body: `${WORDS[i % 4]} ${WORDS[(i * 5) % 12]}`, tag: `t${i % 3}`, n: i }]), { t: { terms: { field: 'tag' } } });
    for (const query of [{ match_all: {} }, { term: { tag: 't1' } }, { match: { body: 'alpha gamma' } }]) {
      const all = (await c.es('POST', '/term/_search', { query, size: 100, sort: ['_doc'] })).hits.hits.map((h: Json) => h._id);
      for (const n of [1, 5, all.length, 100]) {
        const before = await c.plans();
        const counted = await c.es('POST', `/term/_count?terminate_after=${n}`, { query });
        expect([query, n, (await c.plans()) - before]).toEqual([query, n, 1]);
        expect([query, n, counted.count, counted.terminated_early]).toEqual([query, n, Math.min(n, all.length), all.length > n]);
        const viewed = await c.es('POST', `/term/_count?terminate_after=${n}&min_score=0`, { query });
        expect([counted.count, counted.terminated_early]).toEqual([viewed.count, viewed.terminated_early]);
        // a search collects the first n matches in index order (a plan), then ranks or sorts them
        const { r, ran } = await c.counted({ query, terminate_after: n, size: 100 });
        expect(ran).toBeGreaterThan(0);
        expect([query, n, r.hits.total.value, r.terminated_early]).toEqual([query, n, Math.min(n, all.length), all.length > n]);
        expect(r.hits.hits.map((h: Json) => h._id).sort()).toEqual(all.slice(0, n).sort());
        for (const page of [{ size: 3, from: 1 }, { size: 4, sort: [{ n: 'desc' }] }, { size: 2, sort: ['_score', { tag: 'asc' }], track_scores: true }]) {
          const body = { query, terminate_after: n, ...page };
          const fast = await c.counted(body);
          const viewed = await c.es('POST', '/term/_search', { ...body, min_score: 0 });
          const shown = (x: Json) => [x.hits.total, x.terminated_early, x.hits.max_score, x.hits.hits.map((h: Json) => [h._id, h._score, h.sort])];
          expect([body, fast.ran > 0, shown(fast.r)]).toEqual([body, true, shown(viewed)]);
        }
        // aggregations over the first n matches: plans, equal to the view's code (min_score 0 takes it, and changes nothing)
        const aggs = { t: { terms: { field: 'tag' } }, s: { sum: { field: 'n' } }, g: { global: {}, aggs: { c: { value_count: { field: 'n' } } } } };
        const planned = await c.counted({ size: 0, query, terminate_after: n, aggs });
        expect(planned.ran).toBeGreaterThan(0);
        const ref = await c.es('POST', '/term/_search', { size: 0, query, terminate_after: n, aggs, min_score: 0 });
        expect([query, n, planned.r.hits.total, planned.r.terminated_early, planned.r.aggregations]).toEqual([query, n, ref.hits.total, ref.terminated_early, ref.aggregations]);
      }
    }
    await expect(c.es('POST', '/term/_count?terminate_after=-1', { query: { match_all: {} } })).rejects.toThrow(/400.*terminateAfter must be > 0/);
  }, 60_000);
});

const hits = (r: Json) => r.hits.hits.map((h: Json) => [h._id, h._score]);
