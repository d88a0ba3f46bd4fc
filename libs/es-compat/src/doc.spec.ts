import { analyze } from './analysis';
import { Doc, type IndexView } from './doc';
import { flatten, type JsonObject } from './mapping';
import { fieldStats, termScore } from './scoring';

const MAPPINGS: JsonObject = { properties: { body: { type: 'text' }, title: { type: 'text', analyzer: 'english' }, tag: { type: 'keyword' } } };

function view(sources: JsonObject[]): IndexView {
  const ix: IndexView = { name: 'docs', uuid: 'u', fields: flatten(MAPPINGS), settings: {}, mappings: MAPPINGS, docs: [], stats: new Map() };
  (ix as { docs: Doc[] }).docs = sources.map((s, i) => new Doc({ _id: `d${i}`, _source: s, _version: 1, _seq_no: i, _primary_term: 1, _routing: null }, ix));
  return ix;
}

/** Term → positions as Elasticsearch numbers them: values of a multi-valued field 100 positions apart. */
function reference(values: string[], analyzer: string): { pos: Map<string, number[]>; len: number } {
  const pos = new Map<string, number[]>();
  let base = 0;
  let len = 0;
  for (const v of values) {
    let last = -1;
    for (const t of analyze(v, analyzer)) {
      last = base + t.pos;
      len++;
      const l = pos.get(t.term);
      if (l) l.push(last);
      else pos.set(t.term, [last]);
    }
    base = (last >= 0 ? last : base) + 101;
  }
  return { pos, len };
}

/**
 * Heap objects (strings included) reachable from a document's own fields other than its row and
 * its view: what the document's derived data costs every major GC to mark. The field's path and
 * analyzer are the caller's strings, not the document's.
 */
function searchObjects(d: Doc, shared: string[]): number {
  const seen = new Set<unknown>();
  const walk = (v: unknown): void => {
    if (typeof v === 'string') { if (!shared.includes(v)) seen.add(v); return; }
    if (typeof v !== 'object' || v === null || seen.has(v)) return;
    seen.add(v);
    if (ArrayBuffer.isView(v)) return; // no pointers inside
    if (v instanceof Map) for (const [k, x] of v) { walk(k); walk(x); }
    else for (const k of Object.getOwnPropertyNames(v)) walk((v as Record<string, unknown>)[k]);
  };
  for (const k of Object.getOwnPropertyNames(d)) if (k !== 'row' && k !== 'index') walk((d as unknown as Record<string, unknown>)[k]);
  return seen.size;
}

describe('Doc: a field index packed per document', () => {
  const sources: JsonObject[] = [
    { body: 'the river stone and the river cloud', title: 'Running rivers', tag: 'a' },
    { body: ['forest ember', 'harbor forest meadow'], title: ['Signals', 'vector matrices'], tag: 'b' },
    { body: '', title: 'lattice' },
    { tag: 'c' },
    { body: 'Ünïcode ÉMBER river 42 o\'neil', title: 'orbit quartz saddle timber violet alpha beta gamma delta' },
  ];
  const ix = view(sources);

  it('answers positions, terms, frequencies and lengths as analysis numbers them (multi-valued fields 100 apart)', () => {
    for (const d of ix.docs) {
      for (const [path, analyzer] of [['body', 'standard'], ['title', 'english']] as const) {
        const raw = d.source[path];
        const ref = reference(raw === undefined ? [] : (Array.isArray(raw) ? raw : [raw]).map(String), analyzer);
        expect(d.positions(path, analyzer)).toEqual(ref.pos);
        expect(d.terms(path, analyzer).sort()).toEqual([...ref.pos.keys()].sort());
        expect(d.length(path, analyzer)).toBe(ref.len);
        expect(d.valueCount(path, analyzer)).toBe(raw === undefined ? 0 : Array.isArray(raw) ? raw.length : 1);
        for (const [t, ps] of ref.pos) {
          expect(d.positionsOf(path, analyzer, t)).toEqual(ps);
          expect(d.freq(path, analyzer, t)).toBe(ps.length);
          expect(d.has(path, analyzer, t)).toBe(true);
        }
        expect(d.freq(path, analyzer, 'absent')).toBe(0);
        expect(d.positionsOf(path, analyzer, 'absent')).toEqual([]);
        expect(d.has(path, analyzer, 'zzz')).toBe(false);
      }
    }
    // the second document: "forest" in both values, the second value 101 after the first's last token (ember at 1: harbor 102, forest 103)
    expect(ix.docs[1].positions('body', 'standard').get('forest')).toEqual([0, 103]);
  });

  it('packs positions past 16 bits (two code units an integer)', () => {
    const many = view([{ body: Array.from({ length: 700 }, (_, i) => `x y${i}`) }, { body: 'x y699 y3' }]);
    const [d, e] = many.docs;
    const ref = reference(d.source.body as string[], 'standard');
    expect(ref.pos.get('y699')![0]).toBeGreaterThan(65_535);
    expect(d.positions('body', 'standard')).toEqual(ref.pos);
    expect(d.freq('body', 'standard', 'x')).toBe(700);
    expect(e.positions('body', 'standard')).toEqual(new Map([['x', [0]], ['y699', [1]], ['y3', [2]]]));
  });

  it('scores from the packed fields (BM25 statistics over every document)', () => {
    const s = fieldStats(ix, 'body', 'standard');
    expect(s.docCount).toBe(3);
    expect(s.df.get('river')).toBe(2);
    expect(s.df.get('forest')).toBe(1);
    expect(s.sumLen).toBe(7 + 5 + 5);
    expect(termScore(ix, ix.docs[0], 'body', 'standard', 'river', 1)).toBeGreaterThan(termScore(ix, ix.docs[4], 'body', 'standard', 'river', 1));
    expect(termScore(ix, ix.docs[3], 'body', 'standard', 'river', 1)).toBe(0);
  });

  it('keeps one string per field and document, not a Map and an array per term (memory shape)', () => {
    const big = view(Array.from({ length: 50 }, (_, i) => ({ body: `alpha beta gamma delta epsilon zeta eta theta w${i} alpha beta`, title: `river ${i}` })));
    fieldStats(big, 'body', 'standard');
    for (const d of big.docs) termScore(big, d, 'body', 'standard', 'alpha', 1);
    for (const d of big.docs) {
      expect(d.freq('body', 'standard', 'alpha')).toBe(2);
      // 9 distinct terms: as Maps of position arrays this was 3 Maps, an entry object and 9 arrays
      // (and a key string), beside the mapped values (a Map, an array a field) indexing had made
      expect(searchObjects(d, ['body', 'standard'])).toBe(1);
      d.length('title', 'english');
      // a second field: a Map holding its key and its packed string beside the first
      expect(searchObjects(d, ['body', 'standard'])).toBeLessThanOrEqual(4);
    }
  });
});
