/**
 * Structured queries (nested bool, minimum_should_match) on a real store: generated queries
 * against a reference evaluator built from the route's own answers for each leaf (plain BM25),
 * and queries the q syntax can say against the route's text form at the default and the reranked ranking.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { TenantStore } from '@mmdb/storage';
import { FtsParticipant, requiredShould, type StructuredQuery } from '@mmdb/fts';

const MANIFEST = `
namespace = "t"
table = "docs"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "body"
ty = "str"
[[fulltext]]
field = "body"
analyzer = "simple"
`;

const PLAIN = { feedback: 'none', proximity: 'none', queryStopwords: 'none' } as const;
const WORDS = ['red', 'green', 'blue', 'cyan', 'gold', 'pink'];

let dir: string;
let store: TenantStore;
let fts: FtsParticipant;
const N = 120;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fts-structured-'));
  fts = new FtsParticipant();
  store = await TenantStore.open({ dir, participants: [fts], sync: false });
  await store.registerSchema(MANIFEST);
  // deterministic texts: each doc holds a few words, some repeated, in varying orders
  let seed = 7;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const changes = [];
  for (let i = 0; i < N; i++) {
    const len = 2 + Math.floor(rnd() * 8);
    const words = Array.from({ length: len }, () => WORDS[Math.floor(rnd() * rnd() * WORDS.length)]);
    changes.push({ op: 'put' as const, schema: 't.docs', row: { id: i, body: words.join(' ') } });
  }
  await store.commit({ changes });
}, 60_000);

afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

type Scores = Map<string, number>;

/** The route's plain BM25 answer for one leaf, as doc → score (every match). */
async function leafScores(q: StructuredQuery): Promise<Scores> {
  const text = 'terms' in q ? q.terms.map((t) => (q.operator === 'and' ? `+${t}` : t)).join(' ') : 'phrase' in q ? `"${q.phrase}"${q.slop ? `~${q.slop}` : ''}` : `${(q as { prefix: string }).prefix}*`;
  return new Map((await fts.search('t.docs', 'body', text, 1000, PLAIN)).map((d) => [d.doc_id, d.score]));
}

/** Reference: which docs match `q` and with what score (Σ matched positive clauses), from leaf answers only. */
async function reference(q: StructuredQuery): Promise<Scores> {
  if (!('bool' in q)) return leafScores(q);
  const b = q.bool;
  const sub = async (xs?: readonly StructuredQuery[]) => Promise.all((xs ?? []).map(reference));
  const [must, should, not] = [await sub(b.must), await sub(b.should), await sub(b.must_not)];
  const need = requiredShould(b);
  const ids = new Set<string>();
  for (const m of [...must, ...should]) for (const id of m.keys()) ids.add(id);
  const out: Scores = new Map();
  for (const id of ids) {
    if (!must.every((m) => m.has(id)) || not.some((m) => m.has(id))) continue;
    const hits = should.filter((m) => m.has(id));
    if (hits.length < need || (must.length === 0 && hits.length === 0)) continue;
    out.set(id, [...must, ...hits].reduce((s, m) => s + (m.get(id) as number), 0));
  }
  return out;
}

const leaf: fc.Arbitrary<StructuredQuery> = fc.oneof(
  fc.record({ terms: fc.subarray(WORDS, { minLength: 1, maxLength: 3 }), operator: fc.constantFrom('or' as const, 'and' as const) }),
  fc.record({ phrase: fc.tuple(fc.constantFrom(...WORDS), fc.constantFrom(...WORDS)).map(([a, b]) => `${a} ${b}`), slop: fc.constantFrom(0, 2) }),
  fc.record({ prefix: fc.constantFrom('re', 'gr', 'g', 'bl', 'c') }),
);

const query: fc.Arbitrary<StructuredQuery> = fc.letrec<{ q: StructuredQuery }>((tie) => ({
  q: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc
      .record({
        must: fc.array(tie('q'), { maxLength: 2 }),
        should: fc.array(tie('q'), { maxLength: 3 }),
        must_not: fc.array(leaf, { maxLength: 1 }),
        msm: fc.option(fc.integer({ min: -1, max: 3 }), { nil: undefined }),
      })
      .filter((b) => b.must.length + b.should.length > 0)
      .map((b) => ({ bool: { must: b.must, should: b.should, must_not: b.must_not, ...(b.msm !== undefined ? { minimum_should_match: b.msm } : {}) } })),
  ),
})).q;

const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));

describe('structured full-text queries', () => {
  it('nested bool and minimum_should_match: the matches and BM25 sums of the reference (generated queries)', async () => {
    await fc.assert(
      fc.asyncProperty(query, async (q) => {
        const want = await reference(q);
        const got = await fts.search('t.docs', 'body', q, 1000, PLAIN);
        expect(new Set(got.map((d) => d.doc_id))).toEqual(new Set(want.keys()));
        for (const d of got) expect(close(d.score, want.get(d.doc_id) as number)).toBe(true);
        // best first, ties by doc id
        for (let i = 1; i < got.length; i++) expect(got[i - 1].score > got[i].score || (got[i - 1].score === got[i].score && got[i - 1].doc_id < got[i].doc_id)).toBe(true);
      }),
      { numRuns: 150, seed: 17 },
    );
  }, 120_000);

  it('minimum_should_match by hand: 2 of 3 words, all but one, more than there are', async () => {
    const two = await fts.search('t.docs', 'body', { bool: { should: [{ terms: ['red'] }, { terms: ['gold'] }, { terms: ['pink'] }], minimum_should_match: 2 } }, 1000, PLAIN);
    const [r, g, p] = await Promise.all(['red', 'gold', 'pink'].map((w) => leafScores({ terms: [w] })));
    const want = [...new Set([...r.keys(), ...g.keys(), ...p.keys()])].filter((id) => [r, g, p].filter((m) => m.has(id)).length >= 2);
    expect(two.map((d) => d.doc_id).sort()).toEqual(want.sort());
    expect(want.length).toBeGreaterThan(0);
    const allButOne = await fts.search('t.docs', 'body', { bool: { should: [{ terms: ['red'] }, { terms: ['gold'] }, { terms: ['pink'] }], minimum_should_match: -1 } }, 1000, PLAIN);
    expect(allButOne.map((d) => d.doc_id).sort()).toEqual(two.map((d) => d.doc_id).sort());
    expect(await fts.search('t.docs', 'body', { bool: { should: [{ terms: ['red'] }], minimum_should_match: 2 } }, 10, PLAIN)).toEqual([]);
  });

  it('a query the syntax can say answers exactly as its text on the route (default and reranked ranking)', async () => {
    const pairs: Array<[StructuredQuery, string]> = [
      [{ bool: { must: [{ bool: { must: [{ terms: ['red'] }], should: [{ terms: ['blue'] }] } }], must_not: [{ terms: ['pink'] }] } }, '+red -pink blue'],
      [{ bool: { should: [{ terms: ['red', 'green'] }, { phrase: 'blue cyan', slop: 1 }] } }, 'red green "blue cyan"~1'],
      [{ bool: { must: [{ bool: { should: [{ prefix: 'gr' }] } }, { terms: ['red', 'blue'], operator: 'and' }], minimum_should_match: 0 } }, '+gr* +red +blue'],
      [{ terms: ['gold', 'red'], operator: 'and' }, '+gold +red'],
      [{ bool: { should: [{ terms: ['red'] }], must_not: [{ bool: { must: [{ terms: ['blue'] }] } }] } }, 'red -blue'],
    ];
    for (const opts of [{}, { feedback: 'rm3', proximity: 'bm25tp' } as const]) {
      for (const [q, text] of pairs) {
        const want = await fts.search('t.docs', 'body', text, 20, opts);
        expect(want.length).toBeGreaterThan(0);
        expect(await fts.search('t.docs', 'body', q, 20, opts)).toEqual(want);
      }
    }
  });

  it('bad structured queries name their path', async () => {
    await expect(fts.search('t.docs', 'body', { bool: { must_not: [{ terms: ['red'] }] } }, 10)).rejects.toMatchObject({ code: 'validation_failed', details: { path: '$.query.bool' } });
    await expect(fts.search('t.docs', 'body', { bool: { must: [{ bool: { should: [{ terms: ['two words'] }] } }] } } as never, 10)).rejects.toMatchObject({ details: { path: '$.query.bool.must[0].bool.should[0].terms[0]' } });
    await expect(fts.search('t.docs', 'body', { nope: 1 } as never, 10)).rejects.toMatchObject({ code: 'validation_failed', details: { path: '$.query' } });
  });
});
