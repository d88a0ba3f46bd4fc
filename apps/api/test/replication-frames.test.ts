/**
 * GET /v1/replication/frames on a single holder (real etcd, real HTTPS): the NDJSON shape with
 * hex frames that decode to the log, follow mode, and its errors (bad parameters, a stale or
 * diverged epoch, a follower past the log, segments dropped by retention); and the sync window
 * (DB_REPLICATION_SYNC_FOLLOWERS): degraded answers, acknowledged ones, strict 504.
 */
import * as https from 'https';
import { Mmdb, type MmdbWarning } from '@mmdb/client';
import { decodeFrame } from '@mmdb/storage';
import { Cluster, until } from './cluster';
import { ITEMS_TOML, OPERATOR, TENANT, TOKEN, TestServer } from './server';

const T = `/v1/tenants/${TENANT}`;
const lines = (text: string) => text.trim().split('\n').map((l) => JSON.parse(l));

describe('replication frames and sync window', () => {
  const c = new Cluster({ DB_LOG_SEGMENT_FRAMES: '16', DB_CHECKPOINT_FRAMES: '20', DB_CHECKPOINT_MS: '0' });
  let a: TestServer;

  beforeAll(async () => {
    await c.start();
    a = await c.node('solo', { DB_REPLICATION_SYNC_FOLLOWERS: '1', DB_REPLICATION_SYNC_MS: '150' });
    await c.writer();
  });
  afterAll(async () => {
    await c.stop();
  });

  it('streams the log as hex frames that decode to what was written, stamped with the lease epoch', async () => {
    expect((await a.request('POST', `${T}/schemas`, { token: TOKEN, raw: ITEMS_TOML, contentType: 'text/plain' })).status).toBe(200);
    for (let i = 1; i <= 3; i++) await a.request('PUT', `${T}/rows/shop.items/${i}`, { token: TOKEN, body: { id: i, name: `n${i}` } });
    const epoch = (await c.op(a, 'GET', '/v1/replication/lease')).json.epoch;
    const r = await c.op(a, 'GET', '/v1/replication/frames?since_segment=0');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toContain('application/x-ndjson');
    const ls = lines(r.text);
    // the log may start with the bootstrap token's catalogue frame: ours are the last four
    const last = (await c.op(a, 'GET', '/v1/replication/status')).json.last_lsn;
    expect(ls[0]).toMatchObject({ type: 'start', tenant: TENANT, holder: 'solo', epoch, since_segment: 0, segment_frames: 16, from_lsn: 1, last_lsn: last });
    const frames = ls.filter((l) => l.type === 'frame').slice(-4);
    expect(frames.map((f) => f.lsn)).toEqual([last - 3, last - 2, last - 1, last]);
    for (const f of frames) {
      const d = decodeFrame(Buffer.from(f.hex, 'hex'));
      expect([d.lsn, d.epoch, f.epoch, f.segment]).toEqual([f.lsn, epoch, epoch, 0]);
    }
    expect(decodeFrame(Buffer.from(frames[3].hex, 'hex')).changes[0]).toMatchObject({ op: 'put', schema: 'shop.items', pk: [3] });
    expect(ls[ls.length - 1]).toMatchObject({ type: 'end', last_lsn: last });
    // after_lsn with the matching epoch: only what follows
    const tail = lines((await c.op(a, 'GET', `/v1/replication/frames?since_segment=0&after_lsn=${last - 2}&epoch=${epoch}`)).text);
    expect(tail.filter((l) => l.type === 'frame').map((l) => l.lsn)).toEqual([last - 1, last]);
  });

  it('answers bad requests with the documented errors', async () => {
    const epoch = (await c.op(a, 'GET', '/v1/replication/lease')).json.epoch;
    const err = async (q: string) => (await c.op(a, 'GET', `/v1/replication/frames${q}`)).json;
    expect(await err('')).toMatchObject({ error: 'validation_failed' });
    expect(await err('?since_segment=-1')).toMatchObject({ error: 'validation_failed' });
    expect(await err('?since_segment=0&bogus=1')).toMatchObject({ error: 'validation_failed' });
    expect(await err('?since_segment=1&after_lsn=3')).toMatchObject({ error: 'validation_failed' });
    // a diverged follower: its frame 2 carries another epoch
    const diverged = await c.op(a, 'GET', `/v1/replication/frames?since_segment=0&after_lsn=2&epoch=${epoch - 1}`);
    expect([diverged.status, diverged.json.error, diverged.json.reason, diverged.json.retry]).toEqual([410, 'resync_required', 'epoch', false]);
    // a follower past this log
    expect(await err(`?since_segment=0&after_lsn=999&epoch=${epoch}`)).toMatchObject({ error: 'resync_required', reason: 'ahead' });
    // a follower that saw a newer epoch than this node's
    expect(await err(`?since_segment=0&epoch=${epoch + 100}`)).toMatchObject({ error: 'stale_epoch' });
    // a tenant token cannot read the log
    expect((await a.request('GET', '/v1/replication/frames?since_segment=0', { token: TOKEN })).status).toBe(403);
  });

  it('follow mode sends frames as they commit', async () => {
    const got: any[] = [];
    const last = (await c.op(a, 'GET', '/v1/replication/status')).json.last_lsn;
    const req = https.get(`${a.url}/v1/replication/frames?since_segment=0&after_lsn=${last}&follow=true`, { ca: a.ca, headers: { authorization: `Bearer ${OPERATOR}` } }, (res) => {
      let buf = '';
      res.on('data', (d) => {
        buf += d;
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          got.push(JSON.parse(buf.slice(0, i)));
          buf = buf.slice(i + 1);
        }
      });
    });
    try {
      await until('the start line', () => got.length >= 1);
      await a.request('PUT', `${T}/rows/shop.items/50`, { token: TOKEN, body: { id: 50, name: 'live' } });
      await until('the live frame', () => got.some((l) => l.type === 'frame'));
      const f = got.find((l) => l.type === 'frame');
      expect(f.lsn).toBe(last + 1);
      expect(decodeFrame(Buffer.from(f.hex, 'hex')).changes[0]).toMatchObject({ pk: [50] });
      await until('a heartbeat', () => got.some((l) => l.type === 'heartbeat'), 5000);
    } finally {
      req.destroy();
    }
  });

  it('without a follower acknowledgement a write answers 200 with X-DB-Replication: degraded; acknowledged, without it', async () => {
    const r = await a.request('PUT', `${T}/rows/shop.items/60`, { token: TOKEN, body: { id: 60, name: 'x' } });
    expect(r.status).toBe(200);
    expect(r.headers['x-db-replication']).toBe('degraded');
    // @mmdb/client: the write returns its result, and the caller gets the documented warning
    const db = new Mmdb({ url: a.url, token: TOKEN, tenant: TENANT, ca: a.ca });
    const warnings: MmdbWarning[] = [];
    db.on('warning', (w) => warnings.push(w));
    expect(await db.rows.put('shop.items', 62, { id: 62, name: 'z' })).toMatchObject({ version: 1, created: true });
    expect(warnings).toEqual([expect.objectContaining({ kind: 'replication_degraded', method: 'PUT', path: `${T}/rows/shop.items/62`, requestId: expect.stringMatching(/^[0-9A-Z]{26}$/) })]);
    await db.close();
    const lease = (await c.op(a, 'GET', '/v1/replication/lease')).json;
    const last = (await c.op(a, 'GET', '/v1/replication/status')).json.last_lsn;
    // a follower acknowledges everything up to one frame ahead of the log
    const ack = await c.op(a, 'POST', '/v1/replication/ack', { follower: 'f1', lsn: last + 1, epoch: lease.epoch });
    expect(ack.status).toBe(200);
    const ok = await a.request('PUT', `${T}/rows/shop.items/61`, { token: TOKEN, body: { id: 61, name: 'y' } });
    expect(ok.status).toBe(200);
    expect(ok.headers['x-db-replication']).toBeUndefined();
    const status = (await c.op(a, 'GET', '/v1/replication/status')).json;
    expect(status.followers).toEqual([expect.objectContaining({ follower: 'f1', lsn: last + 1 })]);
    expect((await c.op(a, 'POST', '/v1/replication/ack', { follower: 'f1', lsn: -1 })).json.error).toBe('validation_failed');
    // an operator forgets a follower: its acknowledgement no longer counts
    expect((await c.op(a, 'POST', '/v1/replication/ack', { follower: 'f2', lsn: last + 1, epoch: lease.epoch })).status).toBe(200);
    expect((await c.op(a, 'DELETE', '/v1/replication/followers/f2')).json).toEqual({ follower: 'f2', removed: true });
    expect((await c.op(a, 'GET', '/v1/replication/status')).json.followers.map((f: { follower: string }) => f.follower)).toEqual(['f1']);
  });

  it('acknowledgements may come as one NDJSON stream, each line counted as it arrives', async () => {
    const lease = (await c.op(a, 'GET', '/v1/replication/lease')).json;
    const last = (await c.op(a, 'GET', '/v1/replication/status')).json.last_lsn;
    const lines = [{ follower: 'f3', lsn: last - 1, epoch: lease.epoch }, { follower: 'f3', lsn: last, epoch: lease.epoch }].map((x) => JSON.stringify(x)).join('\n') + '\n';
    const r = await a.request('POST', '/v1/replication/ack', { token: OPERATOR, raw: lines, contentType: 'application/x-ndjson' });
    expect([r.status, r.json.acknowledged, r.json.last]).toEqual([200, 2, expect.objectContaining({ follower: 'f3', lsn: last })]);
    expect((await c.op(a, 'GET', '/v1/replication/status')).json.followers).toContainEqual(expect.objectContaining({ follower: 'f3', lsn: last }));
    const bad = await a.request('POST', '/v1/replication/ack', { token: OPERATOR, raw: '{"follower":"f3","lsn":1}\nnot json\n', contentType: 'application/x-ndjson' });
    expect([bad.status, bad.json.error]).toEqual([400, 'validation_failed']);
    expect((await c.op(a, 'DELETE', '/v1/replication/followers/f3')).json.removed).toBe(true);
  });

  it('asking for segments dropped by retention is 410 resync_required', async () => {
    const epoch = (await c.op(a, 'GET', '/v1/replication/lease')).json.epoch;
    // f1 acknowledges far ahead, so neither the sync window nor retention waits for it
    expect((await c.op(a, 'POST', '/v1/replication/ack', { follower: 'f1', lsn: 1e6, epoch })).status).toBe(200);
    for (let i = 100; i < 150; i++) expect((await a.request('PUT', `${T}/rows/shop.items/${i}`, { token: TOKEN, body: { id: i, name: `r${i}` } })).status).toBe(200);
    const gone = await until('segment 0 dropped', async () => {
      const r = await c.op(a, 'GET', '/v1/replication/frames?since_segment=0');
      return r.status === 410 ? r : null;
    });
    expect(gone.json).toMatchObject({ error: 'resync_required', reason: 'retention', retry: false });
    expect(gone.json.message).toContain('snapshot');
    // the newest segment is never dropped
    const seg = Math.floor(((await c.op(a, 'GET', '/v1/replication/status')).json.last_lsn - 1) / 16);
    const ok = await c.op(a, 'GET', `/v1/replication/frames?since_segment=${seg}`);
    expect([ok.status, ok.json]).toEqual([200, undefined]);
  });

  it('with DB_REPLICATION_SYNC_STRICT a write past the window is 504 gateway_timeout (and stays committed)', async () => {
    const s = await c.node('strict', { DB_REPLICATION_SYNC_FOLLOWERS: '1', DB_REPLICATION_SYNC_MS: '100', DB_REPLICATION_SYNC_STRICT: 'true', DB_ETCD_ENDPOINTS: c.etcd.endpoint });
    await until('strict follows', async () => (await c.op(s, 'GET', '/v1/replication/status')).json.role === 'follower');
    expect((await c.op(a, 'POST', '/v1/replication/step-down')).status).toBe(200);
    expect((await c.writer())[0]).toBe('strict');
    // its only follower goes away: nothing acknowledges
    await a.stop();
    expect((await s.request('POST', `${T}/schemas`, { token: TOKEN, raw: ITEMS_TOML, contentType: 'text/plain' })).status).toBe(504);
    const r = await s.request('PUT', `${T}/rows/shop.items/1`, { token: TOKEN, body: { id: 1, name: 'strict' } });
    expect([r.status, r.json.error, r.json.retry]).toEqual([504, 'gateway_timeout', true]);
    expect((await s.request('GET', `${T}/rows/shop.items/1`, { token: TOKEN })).json).toMatchObject({ name: 'strict' });
    // @mmdb/client retries a 504 of a keyed write (0.25, 0.5, 1 s, the same Idempotency-Key each time):
    // the write is committed once; every try answers 504 until the window is met, so the last 504 is the answer
    const db = new Mmdb({ url: s.url, token: TOKEN, tenant: TENANT, ca: s.ca });
    const retries: number[] = [];
    db.on('retry', (x) => retries.push(x.delayMs));
    const e = await db.rows.insert('shop.items', { id: 5000, name: 'once' }).catch((x) => x);
    expect(e).toMatchObject({ code: 'gateway_timeout', status: 504, retry: true });
    expect(retries).toEqual([250, 500, 1000]);
    expect((await s.request('GET', `${T}/rows/shop.items/5000`, { token: TOKEN })).headers.etag).toMatch(/"1"$/); // version 1: written once
    await db.close();
  });
});
