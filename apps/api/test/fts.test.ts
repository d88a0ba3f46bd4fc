/** Full-text routes (spec §4.9) over real HTTPS against the built server. */
import { bootstrapEnv, PAPERS_TOML as PAPERS, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;


describe('fts routes over real HTTPS (spec §4.9)', () => {
  let srv: TestServer;
  const get = (p: string) => srv.request('GET', `${T}/fts${p}`, { token: TOKEN });
  const post = (p: string, body: unknown) => srv.request('POST', `${T}/fts${p}`, { token: TOKEN, body });

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: PAPERS, contentType: 'text/plain' })).status).toBe(200);
    const rows = [
      { id: 'p1', body: 'shock waves in supersonic flow' },
      { id: 'p2', body: 'the boundary layer of a flat plate' },
      { id: 'p3', body: 'shock wave boundary layer interaction' },
    ];
    expect((await srv.request('POST', `${T}/rows/lib.papers/_batch`, { token: TOKEN, body: rows })).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('ranks rows of a declared field by BM25, best first', async () => {
    const r = await get(`/lib.papers/body?q=${encodeURIComponent('boundary layer shock')}`);
    expect(r.status).toBe(200);
    expect(r.json.map((h: any) => h.doc_id)).toEqual(['p3', 'p2', 'p1']);
    expect(r.json[0].score).toBeGreaterThan(r.json[1].score);
    expect((await get(`/lib.papers/body?q=${encodeURIComponent('"boundary layer" -shock')}`)).json.map((h: any) => h.doc_id)).toEqual(['p2']);
    expect((await get(`/lib.papers/body?q=shock&limit=1`)).json).toHaveLength(1);
    // relevance feedback (RM3 reranks the first round's docs): the same docs, reordered by the expanded query
    const fb = await get(`/lib.papers/body?q=${encodeURIComponent('shock layer')}&feedback=rm3`);
    const none = await get(`/lib.papers/body?q=${encodeURIComponent('shock layer')}&feedback=none`);
    expect(fb.status).toBe(200);
    expect(fb.json.map((h: any) => h.doc_id).sort()).toEqual(none.json.map((h: any) => h.doc_id).sort());
    expect(fb.json.map((h: any) => h.doc_id).sort()).toEqual(['p1', 'p2', 'p3']);
    expect(fb.json.map((h: any) => h.score)).not.toEqual(none.json.map((h: any) => h.score));
    // the default ranking is plain BM25 (spec 4.9): every stage off, scores included; the reranked one is opt-in
    const q = encodeURIComponent('shock layer boundary');
    const dflt = await get(`/lib.papers/body?q=${q}`);
    expect(dflt.json).toEqual((await get(`/lib.papers/body?q=${q}&feedback=none&proximity=none&query_stopwords=none`)).json);
    expect(dflt.json).not.toEqual((await get(`/lib.papers/body?q=${q}&feedback=rm3&proximity=bm25tp`)).json);
  });

  it('standalone documents: first POST creates the field, searchable when the call returns', async () => {
    const r = await post('/notes/text', { doc_id: 'n1', text: 'Hypersonic inlets and heat' });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ doc_id: 'n1', created: true });
    expect((await get('/notes/text?q=hypersonic')).json.map((h: any) => h.doc_id)).toEqual(['n1']);
    expect((await post('/notes/text', { doc_id: 'n1', text: 'nothing' })).json).toMatchObject({ created: false });
    expect((await get('/notes/text?q=hypersonic')).json).toEqual([]);
  });

  it('answers 400/404 with the spec codes and a message naming the problem', async () => {
    const cases: Array<[Promise<any>, number, string, string]> = [
      [post('/notes/text', { doc_id: 'x' }), 400, 'validation_failed', 'text'],
      [post('/notes/text', { text: 'x' }), 400, 'validation_failed', 'doc_id'],
      [get('/lib.papers/body?q='), 400, 'validation_failed', 'q'],
      [get('/lib.papers/body'), 400, 'validation_failed', 'q'],
      [get(`/lib.papers/body?q=${encodeURIComponent('"open')}`), 400, 'validation_failed', 'unterminated'],
      [get('/lib.papers/body?q=x&limit=0'), 400, 'validation_failed', 'limit'],
      [get('/lib.papers/body?q=x&feedback=magic'), 400, 'validation_failed', 'feedback'],
      [get('/lib.papers/body?q=x&proximity=near'), 400, 'validation_failed', 'proximity'],
      [get('/lib.papers/body?q=x&query_stopwords=yes'), 400, 'validation_failed', 'query_stopwords'],
      [get('/nope/text?q=x'), 404, 'not_found', 'nope'],
      [get('/lib.papers/id?q=x'), 404, 'not_found', 'id'],
    ];
    for (const [p, status, code, words] of cases) {
      const r = await p;
      expect(r.status).toBe(status);
      expect(r.json).toMatchObject({ error: code, message: expect.stringContaining(words) });
    }
  });
});
