import fc from 'fast-check';
import { candidates, textTermDocs, textTermOrdinalBound, textTermOrdinals } from './candidates';
import { Doc, globalOrdinals, type DocRow, type IndexView } from './doc';
import { flatten, type JsonObject } from './mapping';
import type { EsBackend } from './port';
import type { IndexRef } from './indices';
import { keywordStats } from './query';
import { fieldStats, termScore } from './scoring';
import { EsState } from './state';

const MAPPINGS: JsonObject = { properties: { body: { type: 'text' }, eng: { type: 'text', analyzer: 'english' }, tag: { type: 'keyword' } } };
const WORDS = ['river', 'stone', 'the', 'rivers', 'running', 'cloud', 'Ünïcode', 'émber', "o'neil", '42', 'forest'];
const TAGS = ['a', 'b', 'c', 'é'];
const TEXT = [['body', 'standard'], ['eng', 'english']] as const;

/** A view rebuilt from scratch over the rows (in _seq_no order): the reference. */
function fresh(rows: DocRow[]): IndexView {
  const ix: IndexView = { name: 'docs', uuid: 'u', fields: flatten(MAPPINGS), settings: {}, mappings: MAPPINGS, docs: [], stats: new Map() };
  (ix as { docs: Doc[] }).docs = [...rows].sort((a, b) => a._seq_no - b._seq_no).map((r) => new Doc(r, ix));
  return ix;
}

/** Everything a search derives from a view (building what is not built yet). */
function derived(ix: IndexView) {
  const sorted = (m: Map<string, number>) => [...m].sort((x, y) => (x[0] < y[0] ? -1 : 1));
  const terms = new Set<string>();
  const text = TEXT.map(([path, an]) => {
    const s = fieldStats(ix, path, an);
    for (const t of s.df.keys()) terms.add(t);
    return { docCount: s.docCount, sumLen: s.sumLen, maxLen: s.maxLen, ascii: !!s.asciiTokens, multi: !!s.multiValued, df: sorted(s.df) };
  });
  const kw = keywordStats(ix, 'tag');
  const lists = TEXT.map(([path, an]) => [...terms].sort().map((t) => [t, textTermDocs(ix, path, an, t).map((d) => d.id)]));
  // document numbers: one per document, below the bound, the same in every list
  const bound = textTermOrdinalBound(ix);
  const idOf = new Map<number, string>();
  const ordOf = new Map<string, number>();
  const numbered = TEXT.every(([path, an]) => [...terms].every((t) => {
    const list = textTermDocs(ix, path, an, t);
    const ords = textTermOrdinals(ix, path, an, t);
    return ords.length === list.length && list.every((d, i) => {
      const o = ords[i];
      if (o < 0 || o >= bound) return false;
      if (!idOf.has(o)) idOf.set(o, d.id);
      if (!ordOf.has(d.id)) ordOf.set(d.id, o);
      return idOf.get(o) === d.id && ordOf.get(d.id) === o;
    });
  }));
  const tags = TAGS.map((v) => [...(candidates(ix, { match: { tag: v } }) ?? [])].map((d) => d.id));
  const scores = ix.docs.map((d) => [...terms].sort().map((t) => termScore(ix, d, 'body', 'standard', t, 1)));
  return { ids: ix.docs.map((d) => d.id), numbered, text, kw: { docCount: kw.docCount, sumLen: kw.sumLen, df: sorted(kw.df) }, lists, tags, ordinals: globalOrdinals(ix, 'tag'), scores };
}

const value = fc.oneof(fc.constant(undefined), fc.constant(''), fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 30 }).map((w) => w.join(' ')));
const source = fc.record({
  body: fc.oneof(value, fc.array(value.filter((v) => v !== undefined), { minLength: 2, maxLength: 3 })),
  eng: value,
  tag: fc.oneof(fc.constant(undefined), fc.constantFrom(...TAGS), fc.array(fc.constantFrom(...TAGS), { minLength: 2, maxLength: 3 })),
}).map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)) as JsonObject);
const op = fc.oneof(
  fc.record({ kind: fc.constant('index' as const), id: fc.integer({ min: 0, max: 15 }), source }),
  fc.record({ kind: fc.constant('delete' as const), id: fc.integer({ min: 0, max: 15 }) }),
);

describe('incremental view after writes (EsState.applyOwn) equals a rebuild', () => {
  it('keeps docs, BM25 statistics, term lists, document numbers and keyword ordinals exact over random index/update/delete batches', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(source, { maxLength: 8 }),
      fc.array(fc.record({ ops: fc.array(op, { minLength: 1, maxLength: 6 }), check: fc.boolean() }), { minLength: 1, maxLength: 8 }),
      async (initial, batches) => {
        const rows = new Map<string, DocRow>();
        let seq = 0;
        for (const [i, s] of initial.entries()) rows.set(`d${i}`, { _id: `d${i}`, _source: s, _version: 1, _seq_no: seq++, _primary_term: 1, _routing: null });
        let lsn = 1;
        const backend: EsBackend = {
          tables: () => [], commit: async () => 0, drop: async () => undefined,
          tableLsn: async () => lsn,
          read: async () => [...rows.values()].map((r) => ({ ...r, _source: JSON.stringify(r._source) })),
        } as unknown as EsBackend;
        const ref = { meta: { es_index: 'docs', uuid: 'u', created: 0, settings: {}, mappings: MAPPINGS, aliases: {} }, table: { id: 'es.i_docs', columns: [], primaryKey: ['_id'], description: 'd' } } as unknown as IndexRef;
        const state = new EsState(backend);
        derived(await state.view(ref));
        for (const b of batches) {
          const puts = new Map<string, DocRow | null>();
          for (const o of b.ops) {
            const id = `d${o.id}`;
            if (o.kind === 'delete') { if (rows.has(id) || puts.get(id)) puts.set(id, null); continue; }
            puts.set(id, { _id: id, _source: o.source, _version: 1, _seq_no: seq++, _primary_term: 1, _routing: null });
          }
          for (const [id, r] of puts) if (r) rows.set(id, r); else rows.delete(id);
          state.applyOwn(ref, lsn, lsn + 1, [...puts.values()].filter((r): r is DocRow => r !== null), [...puts].filter(([, r]) => r === null).map(([id]) => id));
          lsn++;
          if (b.check) expect(derived(await state.view(ref))).toEqual(derived(fresh([...rows.values()])));
        }
        expect(derived(await state.view(ref))).toEqual(derived(fresh([...rows.values()])));
      },
    ), { numRuns: 150 });
  }, 120_000);
});
