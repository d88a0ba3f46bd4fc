import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TenantStore } from '@mmdb/storage';
import { FtsParticipant, idf, bm25 } from '@mmdb/fts';

const MANIFEST = `
namespace = "lib"
table = "papers"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "title"
ty = "str"
[[columns]]
name = "body"
ty = "str"
[[fulltext]]
field = "title"
analyzer = "standard"
k1 = 2.0
b = 0.5
[[fulltext]]
field = "body"
`;

/** Plain BM25: no proximity rescoring, no feedback, no query stop words. */
const PLAIN = { feedback: 'none', proximity: 'none', queryStopwords: 'none' } as const;
/** The opt-in ranking: proximity rescoring and the RM3 rerank. */
const RERANKED = { feedback: 'rm3', proximity: 'bm25tp' } as const;

describe('FtsParticipant on a real store', () => {
  let dir: string;
  let store: TenantStore;
  let fts: FtsParticipant;

  const open = async (segmentFrames?: number) => {
    fts = new FtsParticipant();
    store = await TenantStore.open({ dir, participants: [fts], sync: false, ...(segmentFrames ? { segmentFrames } : {}) });
  };

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fts-'));
    await open();
    await store.registerSchema(MANIFEST);
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('indexes rows in their commit and keeps statistics exact over update and delete', async () => {
    await store.commit({
      changes: [
        { op: 'put', schema: 'lib.papers', row: { id: 1, title: 'Shock waves', body: 'shock waves in supersonic flow' } },
        { op: 'put', schema: 'lib.papers', row: { id: 2, title: 'Boundary layers', body: 'the boundary layer of a flat plate' } },
        { op: 'put', schema: 'lib.papers', row: { id: 3, title: 'Heat', body: 'heat transfer' } },
      ],
    });
    // body (english): 1 → shock wave supersonic flow (4); 2 → boundary layer flat plate (4); 3 → heat transfer (2)
    expect(fts.fieldStats('lib.papers', 'body')).toMatchObject({ docs: 3, total: 10, liveDocs: 3 });
    expect((await fts.search('lib.papers', 'body', 'flow')).map((h) => h.doc_id)).toEqual(['1']);

    await store.put('lib.papers', { id: 1, title: 'Shock waves', body: 'laminar flow and more flow' });
    expect(fts.fieldStats('lib.papers', 'body')).toMatchObject({ docs: 3, total: 9 }); // 1 is now laminar flow flow (3)
    expect(fts.docFreq('lib.papers', 'body', 'shock')).toBe(0);
    expect(fts.docFreq('lib.papers', 'body', 'flow')).toBe(1);

    await store.delete('lib.papers', [2]);
    expect(fts.fieldStats('lib.papers', 'body')).toMatchObject({ docs: 2, liveDocs: 2 });
    expect(fts.docFreq('lib.papers', 'body', 'boundari')).toBe(0);
    expect(await fts.search('lib.papers', 'body', 'boundary')).toEqual([]);

    // a row without the text leaves the field
    await store.put('lib.papers', { id: 3, title: 'Heat' });
    expect(fts.fieldStats('lib.papers', 'body')).toMatchObject({ docs: 1 });
  });

  it('scores with the field’s own k1/b and analyzer (hand-computed)', async () => {
    await store.commit({
      changes: [
        { op: 'put', schema: 'lib.papers', row: { id: 1, title: 'running running fast', body: 'x' } },
        { op: 'put', schema: 'lib.papers', row: { id: 2, title: 'running', body: 'x' } },
      ],
    });
    // standard analyzer: no stemming, so "run" does not match "running"
    expect(await fts.search('lib.papers', 'title', 'run', 20, PLAIN)).toEqual([]);
    const r = await fts.search('lib.papers', 'title', 'running', 20, PLAIN);
    const w = idf(2, 2);
    const p = { k1: 2.0, b: 0.5 };
    expect(r.map((h) => h.doc_id)).toEqual(['1', '2']);
    expect(r[0].score).toBeCloseTo(bm25(w, 2, 3, 2, p), 12);
    expect(r[1].score).toBeCloseTo(bm25(w, 1, 1, 2, p), 12);
    expect(r[0].score).toBeCloseTo((Math.log(1 + 0.5 / 2.5) * 2 * 3) / (2 + 2 * (0.5 + (0.5 * 3) / 2)), 12);
  });

  it('the reranked ranking (proximity + RM3, opt-in) honours required, excluded and phrase clauses', async () => {
    const rows = [
      'supersonic shock wave on a wing',
      'wave tank and a shock absorber for supersonic models', // same words, far apart
      'supersonic wing flutter',
      'shock wave laminar boundary layer',
      'laminar flow on a supersonic wing with a shock wave',
      'papers available on heat',
    ];
    await store.commit({ changes: rows.map((body, i) => ({ op: 'put' as const, schema: 'lib.papers', row: { id: i + 1, body } })) });
    const ids = async (q: string, opts: object = RERANKED) => (await fts.search('lib.papers', 'body', q, 20, opts)).map((h) => h.doc_id);
    // proximity: the adjacent "shock wave" ranks above the same words far apart
    const near = await ids('shock wave supersonic');
    expect(near.indexOf('1')).toBeLessThan(near.indexOf('2'));
    for (const id of await ids('+wing shock')) expect(['1', '3', '5']).toContain(id);
    expect(await ids('shock wave -laminar')).not.toEqual(expect.arrayContaining(['4']));
    expect(await ids('shock wave -laminar')).not.toContain('5');
    expect((await ids('+"shock wave" supersonic')).sort()).toEqual(['1', '4', '5']); // the phrase is required: 2 has the words apart
    expect((await ids('"shock wave" -supersonic')).sort()).toEqual(['4']);
    // query stop words (opt-in) drop request phrasing, unless nothing else is left
    const qs = { ...RERANKED, queryStopwords: 'auto' };
    expect(await ids('papers available heat', qs)).toEqual(['6']);
    expect(await ids('papers available', qs)).toEqual(['6']);
    // off by default: "available" counts like any word
    expect((await fts.search('lib.papers', 'body', 'available heat wing', 20)).length).toBeGreaterThan(1);
    const on = await fts.search('lib.papers', 'body', 'papers available heat', 20, { ...PLAIN, queryStopwords: 'auto' });
    const off = await fts.search('lib.papers', 'body', 'papers available heat', 20, PLAIN);
    expect(off[0].score).toBeGreaterThan(on[0].score);
    // plain BM25 (the default) differs from the reranked ranking only in score, not in what matches
    expect((await ids('shock wave supersonic', PLAIN)).sort()).toEqual(['1', '2', '3', '4', '5']);
    // the default is plain BM25 (spec 4.9): the same answer, scores included, as every stage off
    for (const q of ['shock wave supersonic', '+wing shock', 'shock wave -laminar', '+"shock wave" supersonic'])
      expect(await fts.search('lib.papers', 'body', q, 20)).toEqual(await fts.search('lib.papers', 'body', q, 20, PLAIN));
    expect(await fts.search('lib.papers', 'body', 'shock wave supersonic', 20)).not.toEqual(await fts.search('lib.papers', 'body', 'shock wave supersonic', 20, RERANKED));
  });

  it('standalone documents: created by the first put, replaced, deleted, phrase-searchable', async () => {
    const put = (id: string, text: string) => store.commit({ changes: [FtsParticipant.putDoc('notes', 'text', id, text)] });
    expect(fts.settings('notes', 'text')).toBeUndefined();
    const r1 = await put('a', 'the shock wave hit the wing');
    expect(r1.results[0]).toMatchObject({ op: 'custom', result: { doc_id: 'a', created: true } });
    await put('b', 'a wave of shock');
    expect(fts.settings('notes', 'text')).toMatchObject({ analyzer: 'english' });
    expect((await fts.search('notes', 'text', '"shock wave"')).map((h) => h.doc_id)).toEqual(['a']);
    expect((await fts.search('notes', 'text', '"wave of shock"')).map((h) => h.doc_id)).toEqual(['b']);
    const r2 = await put('a', 'quiet here');
    expect(r2.results[0]).toMatchObject({ result: { created: false } });
    expect(await fts.search('notes', 'text', '"shock wave"')).toEqual([]);
    expect(fts.fieldStats('notes', 'text')).toMatchObject({ docs: 2, total: 3 }); // a: quiet (here is a stop word); b: wave shock
    await store.commit({ changes: [FtsParticipant.deleteDoc('notes', 'text', 'b')] });
    expect(fts.fieldStats('notes', 'text')).toMatchObject({ docs: 1 });
  });

  it('rejects unknown tables/fields and bad queries with the spec codes', async () => {
    await expect(fts.search('nope', 'text', 'x')).rejects.toMatchObject({ code: 'not_found', message: expect.stringContaining('nope') });
    await expect(fts.search('lib.papers', 'id', 'x')).rejects.toMatchObject({ code: 'not_found', message: expect.stringContaining('"id"') });
    await expect(fts.search('lib.papers', 'body', '')).rejects.toMatchObject({ code: 'validation_failed' });
    await expect(fts.search('lib.papers', 'body', '"open')).rejects.toMatchObject({ code: 'validation_failed' });
    await expect(fts.search('lib.papers', 'body', 'x', 0)).rejects.toMatchObject({ code: 'validation_failed' });
    await expect(store.commit({ changes: [{ op: 'custom', participant: 'fts', type: 'put_doc', payload: { table: 't', field: 'f', doc_id: 'x' } }] })).rejects.toMatchObject({
      code: 'validation_failed',
    });
  });

  it('a restart keeps postings, statistics and standalone fields', async () => {
    await store.put('lib.papers', { id: 7, title: 'Hypersonic heat', body: 'heat transfer at hypersonic speed' });
    await store.commit({ changes: [FtsParticipant.putDoc('notes', 'text', 'n', 'hypersonic inlets')] });
    const before = await fts.search('lib.papers', 'body', 'hypersonic heat');
    const statsBefore = fts.fieldStats('lib.papers', 'body');
    await store.close();
    await open();
    expect(await fts.search('lib.papers', 'body', 'hypersonic heat')).toEqual(before);
    expect(fts.fieldStats('lib.papers', 'body')).toEqual(statsBefore);
    expect((await fts.search('notes', 'text', '"hypersonic inlets"')).map((h) => h.doc_id)).toEqual(['n']);
  });

  it('its checkpoint is the LSN it applied, so log retention drops old segments; a restart after that keeps every posting', async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
    await open(4);
    await store.registerSchema(MANIFEST); // lsn 1
    for (let i = 0; i < 11; i++) await store.put('lib.papers', { id: i, title: `t${i}`, body: `heat transfer ${i % 2 ? 'hypersonic' : 'subsonic'} flow` }); // lsn 2..12
    const before = await fts.search('lib.papers', 'body', 'hypersonic heat', 20, PLAIN);
    const m = await store.maintain();
    expect(m.checkpoint.fts).toBe(12);
    expect(m.dropped).toEqual([0, 1]); // lsn 1..8; segment 2 (lsn 9..12) is the newest and stays
    await store.close();
    await open(4);
    expect(store.recovery.replayed.fts).toBe(0);
    expect(await fts.search('lib.papers', 'body', 'hypersonic heat', 20, PLAIN)).toEqual(before);
    expect(before).toHaveLength(11);
  });
});
