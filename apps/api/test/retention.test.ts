/**
 * Log retention through the running server: with small segments and a low checkpoint
 * threshold, writes of rows, fts documents and vectors make the tenant store checkpoint and
 * drop old segments in the background (seen in /metrics), and a restart after that answers
 * every read, search and top-k as before.
 */
import { bootstrapEnv, PAPERS_TOML, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;
const gauge = (text: string, name: string): number => {
  const m = new RegExp(`^${name}\\{tenant="${TENANT}"\\} (\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
};

describe('log retention over real HTTPS', () => {
  let srv: TestServer;
  const env = bootstrapEnv({ DB_LOG_SEGMENT_FRAMES: '16', DB_CHECKPOINT_FRAMES: '40', DB_CHECKPOINT_MS: '0' });
  const dir = TestServer.tempDir();
  const req = (m: string, p: string, body?: unknown) => srv.request(m, T + p, { token: TOKEN, ...(body !== undefined ? { body } : {}) });

  afterAll(async () => {
    await srv.stop();
  });

  it('drops old segments in the background and restarts with every answer intact', async () => {
    srv = await new TestServer(dir, env).start();
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: PAPERS_TOML, contentType: 'text/plain' })).status).toBe(200);
    // one frame per request: 60 rows, 30 vectors
    for (let i = 0; i < 60; i++) expect((await req('PUT', `/rows/lib.papers/p${i}`, { body: `note ${i} ${i % 3 === 0 ? 'hypersonic' : 'subsonic'} flow` })).status).toBe(200);
    for (let i = 0; i < 30; i++) expect((await req('POST', '/vector/emb/put', { id: `v${i}`, embedding: [Math.cos(i), Math.sin(i), i / 30], metric: 'l2' })).status).toBe(200);
    // 91 frames in segments of 16: the maintenance (checked each second) keeps only what its checkpoint needs
    // Maintenance is triggered by frame count: on a loaded host it may have run while the
    // writes above were still landing, leaving fewer than DB_CHECKPOINT_FRAMES frames past it.
    // Filler rows (not matching the searches below) then bring the next maintenance on.
    let metrics = '';
    let filler = 0;
    const t0 = Date.now();
    for (;;) {
      await new Promise((r) => setTimeout(r, 200));
      metrics = (await srv.request('GET', '/metrics')).text;
      if (gauge(metrics, 'db_log_segments') <= 2 || Date.now() - t0 >= 30_000) break;
      expect((await req('PUT', `/rows/lib.papers/f${filler++}`, { body: 'filler' })).status).toBe(200);
    }
    expect(gauge(metrics, 'db_log_segments')).toBeLessThanOrEqual(2);
    expect(gauge(metrics, 'db_log_frames_since_checkpoint')).toBeLessThan(40);
    // the change feed's view of retention: no open cursor, the checkpoint holds what is kept
    const series = (name: string, label: string) => Number(new RegExp(`^${name}\\{tenant="${TENANT}",${label}\\} (\\d+)`, 'm').exec(metrics)?.[1]);
    expect(series('db_feed_cursors', 'kind="follower"')).toBe(0);
    expect(series('db_feed_cursors', 'kind="watch"')).toBe(0);
    expect(series('db_log_frames_retained', 'holder="watch"')).toBe(0);
    expect(series('db_log_frames_retained', 'holder="checkpoint"')).toBeLessThan(40);
    expect(gauge(metrics, 'db_log_oldest_held_lsn')).toBeGreaterThan(40);
    const search = async () => (await req('GET', `/fts/lib.papers/body?q=hypersonic&limit=100`)).json.map((h: { doc_id: string }) => h.doc_id).sort();
    const topk = async () => (await req('POST', '/vector/emb/topk', { vector: [1, 0, 0], k: 5 })).json;
    const before = { hits: await search(), near: await topk(), row: (await req('GET', '/rows/lib.papers/p3')).json };
    expect(before.hits).toHaveLength(20);
    // a kill, not a clean stop: the restart has only the background checkpoint and the log after it
    await srv.kill();
    srv = await new TestServer(dir, env).start();
    expect(await search()).toEqual(before.hits);
    expect(await topk()).toEqual(before.near);
    expect((await req('GET', '/rows/lib.papers/p3')).json).toEqual(before.row);
    expect((await req('GET', '/rows/lib.papers/p59')).status).toBe(200);
  }, 60_000);
});
