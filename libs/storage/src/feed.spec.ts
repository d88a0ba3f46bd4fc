import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import type { ChangeFeed, FeedBatch } from './feed';
import { KV_TOML as T } from '../test/kv-schema';
import { TenantStore } from './store';

/** Reads a feed until it has delivered `last`; returns the LSNs in delivery order. */
async function readUntil(feed: ChangeFeed, last: number): Promise<number[]> {
  const got: number[] = [];
  while (!got.length || got[got.length - 1] < last) {
    const b = await feed.next();
    if (!b) break;
    for (const e of b.entries) got.push(e.frame.lsn);
    expect(b.cursor.lsn).toBe(got[got.length - 1]);
  }
  return got;
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

// Stores run with sync: false where many commits go by: the feed's order does not depend on fsync.
jest.setTimeout(30_000);

describe('changesFrom: the resumable change feed', () => {
  let dir: string;
  let store: TenantStore;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'feed-'))));
  afterEach(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('gives a reader starting at any LSN every frame once, in order, while commits go on', async () => {
    store = await TenantStore.open({ dir, segmentFrames: 64, sync: false });
    await store.registerSchema(T);
    for (let i = 0; i < 40; i++) await store.put('t.kv', { k: i, v: 'a' });
    const readers: Array<{ from: number; feed: ChangeFeed }> = [];
    // every LSN written so far, and (below) the tail while groups are being written
    for (let from = 0; from <= store.lastLsn; from += 3) readers.push({ from, feed: store.changesFrom({ epoch: 0, lsn: from }, { batchFrames: 7, bufferFrames: 50 }) });
    let writing = true;
    const writers = Array.from({ length: 6 }, async (_, w) => {
      for (let i = 0; i < 60; i++) await store.put('t.kv', { k: 1000 + w * 100 + i, v: `w${w}` });
    });
    const tails = (async () => {
      while (writing) {
        const from = store.lastLsn;
        readers.push({ from, feed: store.changesFrom({ epoch: 0, lsn: from }, { batchFrames: 5, bufferFrames: 30 }) });
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    await Promise.all(writers);
    writing = false;
    await tails;
    const last = store.lastLsn;
    expect(last).toBe(1 + 40 + 360);
    expect(readers.length).toBeGreaterThan(15);
    for (const r of readers) {
      expect(await readUntil(r.feed, last)).toEqual(range(r.from + 1, last));
      r.feed.close();
    }
  });

  it('a reader opened while a group is durable but not yet published (inside apply) misses nothing and repeats nothing', async () => {
    const opened: Array<{ from: number; feed: ChangeFeed; first: Promise<FeedBatch | null> }> = [];
    // apply runs after a group's batch is durable and before its frames are published: each
    // reader starts reading right there (registers for live frames, then reads the log)
    const spy = {
      name: 'spy',
      apply: (f: { lsn: number }) => {
        if (f.lsn % 7 !== 0) return;
        for (const from of [f.lsn - 3, f.lsn - 1, f.lsn, store.lastLsn]) {
          const feed = store.changesFrom({ epoch: 0, lsn: from }, { batchFrames: 4 });
          opened.push({ from, feed, first: feed.next() });
        }
      },
    };
    store = await TenantStore.open({ dir, participants: [spy], sync: false });
    await store.registerSchema(T);
    await Promise.all(Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; i < 50; i++) await store.put('t.kv', { k: w * 100 + i, v: 'x' });
    }));
    const last = store.lastLsn;
    expect(opened.length).toBeGreaterThan(50);
    for (const r of opened) {
      const first = (await r.first)!.entries.map((e) => e.frame.lsn);
      const rest = first[first.length - 1] < last ? await readUntil(r.feed, last) : [];
      expect([...first, ...rest]).toEqual(range(r.from + 1, last));
      r.feed.close();
    }
  });

  it('settled is false from a group\'s apply until its frames are published, true at rest (a participant and the changes observable agree then)', async () => {
    const during: boolean[] = [];
    const spy = { name: 'spy', apply: () => void during.push(store.settled) };
    store = await TenantStore.open({ dir, participants: [spy], sync: false });
    await store.registerSchema(T);
    const published: boolean[] = [];
    const sub = store.changes.subscribe(() => published.push(store.settled));
    expect(store.settled).toBe(true);
    await Promise.all(Array.from({ length: 3 }, async (_, w) => {
      for (let i = 0; i < 20; i++) await store.put('t.kv', { k: w * 100 + i, v: 'x' });
    }));
    sub.unsubscribe();
    expect(during.length).toBeGreaterThanOrEqual(60);
    expect(during.every((x) => x === false)).toBe(true);
    // published inside the window (the frame's group is still counted until publish returns)
    expect(published.length).toBeGreaterThanOrEqual(60);
    expect(published.every((x) => x === false)).toBe(true);
    expect(store.settled).toBe(true);
  });

  it('follows live commits after replaying the log, and a closed reader answers null', async () => {
    store = await TenantStore.open({ dir });
    await store.registerSchema(T);
    await store.put('t.kv', { k: 1, v: 'a' });
    const feed = store.changesFrom({ epoch: 0, lsn: 0 });
    expect((await feed.next())!.entries.map((e) => e.frame.lsn)).toEqual([1, 2]);
    const pending = feed.next();
    await store.put('t.kv', { k: 2, v: 'b' });
    const b = (await pending)!;
    expect(b.entries.map((e) => e.frame.lsn)).toEqual([3]);
    expect(b.entries[0].frame.changes[0]).toMatchObject({ op: 'put', values: { k: 2, v: 'b' } });
    expect(b.entries[0].bytes.length).toBeGreaterThan(9);
    const waiting = feed.next();
    feed.close();
    expect(await waiting).toBeNull();
  });

  it('a stuck reader neither blocks commits nor grows its buffer past its bound; it catches up from the log', async () => {
    // no recent frames kept in memory: past its buffer the reader reads the stored log
    store = await TenantStore.open({ dir, sync: false, feedTailFrames: 0 });
    await store.registerSchema(T);
    const feed = store.changesFrom({ epoch: 0, lsn: store.lastLsn }, { bufferFrames: 32, batchFrames: 500 });
    // register it live: its first read finds nothing new yet, so it waits on the buffer
    const first = feed.next();
    await store.put('t.kv', { k: 0, v: 'x' });
    expect((await first)!.entries.map((e) => e.frame.lsn)).toEqual([2]);
    // now it stops reading while 3,000 frames commit
    await Promise.all(Array.from({ length: 10 }, async (_, w) => {
      for (let i = 0; i < 300; i++) await store.put('t.kv', { k: 1 + w * 1000 + i, v: 'y' });
    }));
    expect(store.lastLsn).toBe(3002);
    expect(feed.buffered).toBeLessThanOrEqual(32);
    expect(feed.overflows).toBeGreaterThanOrEqual(1);
    expect(await readUntil(feed, 3002)).toEqual(range(3, 3002));
    expect(feed.logReads).toBeGreaterThan(1);
    feed.close();
  });

  it('readers behind their buffer share the recent frames the hub keeps, once for all, and read the log only past them', async () => {
    store = await TenantStore.open({ dir, sync: false, feedTailFrames: 500 });
    await store.registerSchema(T);
    const at = store.lastLsn;
    const feeds = Array.from({ length: 20 }, () => store.changesFrom({ epoch: 0, lsn: at }, { bufferFrames: 16, batchFrames: 64 }));
    const first = feeds.map((f) => f.next());
    await store.put('t.kv', { k: 0, v: 'x' });
    for (const p of first) expect((await p)!.entries.map((e) => e.frame.lsn)).toEqual([at + 1]);
    // every reader stops reading while 400 frames commit: each buffer overflows
    await Promise.all(Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; i < 100; i++) await store.put('t.kv', { k: 1 + w * 1000 + i, v: 'y' });
    }));
    const last = store.lastLsn;
    expect(last).toBe(at + 401);
    const frameOf = new Map<number, unknown>();
    for (const f of feeds) {
      expect(f.overflows).toBeGreaterThanOrEqual(1);
      const got: number[] = [];
      while (!got.length || got[got.length - 1] < last) {
        for (const e of (await f.next())!.entries) {
          got.push(e.frame.lsn);
          // the same decoded frame for every reader: nothing was read and decoded again per reader
          if (!frameOf.has(e.frame.lsn)) frameOf.set(e.frame.lsn, e.frame);
          expect(e.frame).toBe(frameOf.get(e.frame.lsn));
        }
      }
      expect(got).toEqual(range(at + 2, last));
      expect(f.logReads).toBe(1); // its first read only (at the log's end, before any frame)
    }
    // a reader further behind than the kept frames (the last 500) reads the log, then joins them
    for (let i = 0; i < 200; i++) await store.put('t.kv', { k: 5000 + i, v: 'z' });
    const late = store.changesFrom({ epoch: 0, lsn: at }, { batchFrames: 64 });
    expect(await readUntil(late, last + 200)).toEqual(range(at + 1, last + 200));
    expect(late.logReads).toBeGreaterThan(0);
    for (const f of [...feeds, late]) f.close();
  });

  it('tells a reader whose frames retention dropped, or that lags past its bound, to resnapshot', async () => {
    store = await TenantStore.open({ dir, segmentFrames: 16 });
    await store.registerSchema(T);
    for (let i = 0; i < 60; i++) await store.put('t.kv', { k: i, v: 'a' });
    expect((await store.truncateLog()).length).toBeGreaterThan(0);
    const gone = store.changesFrom({ epoch: 0, lsn: 0 });
    await expect(gone.next()).rejects.toMatchObject({ code: 'resync_required', details: { reason: 'retention' } });
    const from = store.feedStats().firstLsn - 1;
    const ok = store.changesFrom({ epoch: 0, lsn: from });
    expect(await readUntil(ok, store.lastLsn)).toEqual(range(from + 1, store.lastLsn));
    ok.close();
    const lagging = store.changesFrom({ epoch: 0, lsn: from }, { maxLagFrames: 5 });
    await expect(lagging.next()).rejects.toMatchObject({ code: 'resync_required', details: { reason: 'lag' } });
    // the bound in bytes: the frames after the cursor hold more than 500 bytes of log
    const heavy = store.changesFrom({ epoch: 0, lsn: from }, { maxLagBytes: 500 });
    await expect(heavy.next()).rejects.toMatchObject({ code: 'resync_required', details: { reason: 'lag' } });
    const light = store.changesFrom({ epoch: 0, lsn: from }, { maxLagBytes: 1_000_000 });
    expect((await light.next())!.entries[0].frame.lsn).toBe(from + 1);
    light.close();
    expect(store.feedStats().cursors).toEqual({ follower: 0, watch: 0 });
  });

  it('holds the log for an open follower until it is past, and for a watch reader up to its bound', async () => {
    store = await TenantStore.open({ dir, segmentFrames: 16 });
    await store.registerSchema(T);
    const follower = store.changesFrom({ epoch: 0, lsn: 0 }, { kind: 'follower', batchFrames: 16 });
    const watch = store.changesFrom({ epoch: 0, lsn: 0 }, { kind: 'watch', maxLagFrames: 40 });
    for (let i = 0; i < 79; i++) await store.put('t.kv', { k: i, v: 'a' });
    let stats = store.feedStats();
    expect(stats.cursors).toEqual({ follower: 1, watch: 1 });
    expect(stats.oldestHeldLsn).toBe(1);
    expect(stats.retainedFrames).toMatchObject({ follower: 80, watch: 40 });
    expect(await store.truncateLog()).toEqual([]); // the follower holds everything
    expect(await readUntil(follower, 48)).toEqual(range(1, 48));
    expect(await store.truncateLog()).toEqual([0, 1]); // past it now; the watch reader holds 40 frames: 41 on
    stats = store.feedStats();
    expect(stats.firstLsn).toBe(33);
    await expect(watch.next()).rejects.toMatchObject({ code: 'resync_required' });
    follower.close();
    expect(store.feedStats().cursors).toEqual({ follower: 0, watch: 0 });
  });

  it('a follower applying the feed through applyFrames ends equal to its leader, and serves its own feed', async () => {
    store = await TenantStore.open({ dir: join(dir, 'leader') });
    const follower = await TenantStore.open({ dir: join(dir, 'follower') });
    try {
      await store.registerSchema(T);
      const chained = follower.changesFrom({ epoch: 0, lsn: 0 });
      const feed = store.changesFrom({ epoch: 0, lsn: 0 }, { kind: 'follower', batchFrames: 50 });
      const shipping = (async () => {
        for await (const b of feed) await follower.applyFrames(b.entries.map((e) => e.bytes));
      })();
      await Promise.all(Array.from({ length: 8 }, async (_, w) => {
        for (let i = 0; i < 40; i++) await store.put('t.kv', { k: w * 100 + i, v: `w${w}` });
      }));
      await store.setEpoch(3);
      await store.delete('t.kv', [5]);
      while (follower.lastLsn < store.lastLsn) await new Promise((r) => setTimeout(r, 5));
      feed.close();
      await shipping;
      expect((await follower.getRow('t.kv', [701]))?.values).toEqual({ k: 701, v: 'w7' });
      expect(await follower.getRow('t.kv', [5])).toBeUndefined();
      expect(follower.settled).toBe(true); // every applied run published
      expect(await readUntil(chained, store.lastLsn)).toEqual(range(1, store.lastLsn));
      chained.close();
      // the follower's epoch history is the leader's: a cursor from either checks the same way
      await expect(follower.changesFrom({ epoch: 0, lsn: store.lastLsn }).next()).rejects.toMatchObject({ details: { reason: 'epoch' } });
    } finally {
      await follower.close();
    }
  });

  it('a named follower holds the log across reconnects until it is removed', async () => {
    store = await TenantStore.open({ dir, segmentFrames: 16 });
    await store.registerSchema(T);
    for (let i = 0; i < 10; i++) await store.put('t.kv', { k: i, v: 'a' });
    const f = store.changesFrom({ epoch: 0, lsn: 5 }, { kind: 'follower', id: 'node-b' });
    expect(await readUntil(f, 11)).toEqual(range(6, 11));
    f.close();
    for (let i = 10; i < 60; i++) await store.put('t.kv', { k: i, v: 'a' });
    expect(await store.truncateLog()).toEqual([]); // still held from lsn 5
    expect(store.feedStats().retainedFrames.follower).toBe(61 - 5);
    const again = store.changesFrom({ epoch: 0, lsn: 11 }, { kind: 'follower', id: 'node-b', batchFrames: 100 });
    expect(await readUntil(again, 61)).toEqual(range(12, 61));
    again.close();
    await store.removeFollower('node-b');
    expect((await store.truncateLog()).length).toBeGreaterThan(0);
  });

  it('live readers share one bounded buffer: a stuck reader holds no memory past its bound and still gets every change in order', async () => {
    store = await TenantStore.open({ dir, sync: false, feedTailFrames: 100, feedTailBytes: 64 * 1024 });
    await store.registerSchema(T);
    const at = store.lastLsn;
    // 50 live readers polling every commit, and one that stops after its first frame
    const live = Array.from({ length: 50 }, () => store.changesFrom({ epoch: 0, lsn: at }, { bufferFrames: 40, batchFrames: 64 }));
    const stuck = store.changesFrom({ epoch: 0, lsn: at }, { bufferFrames: 40, batchFrames: 64 });
    const firsts = [...live, stuck].map((f) => f.next());
    await store.put('t.kv', { k: 0, v: 'x' });
    for (const p of firsts) expect((await p)!.entries.map((e) => e.frame.lsn)).toEqual([at + 1]);
    const seen = live.map(() => [at + 1]);
    let maxHeld = 0;
    for (let i = 1; i <= 600; i++) {
      await store.put('t.kv', { k: i, v: 'y'.repeat(i % 7 === 0 ? 2000 : 10) });
      maxHeld = Math.max(maxHeld, store.feedStats().memory.frames);
      expect(store.feedStats().memory.bytes).toBeLessThanOrEqual(64 * 1024 + 4096); // the bytes bound (and the last frame over it)
      live.forEach((f, r) => {
        const b = f.poll(); // one frame since the last poll: taken from the shared buffer, no wait
        expect(b!.entries.map((e) => e.frame.lsn)).toEqual([at + 1 + i]);
        seen[r].push(b!.entries[0].frame.lsn);
      });
    }
    // the buffer stayed within its frame bound while the stuck reader fell 600 frames behind
    expect(maxHeld).toBeLessThanOrEqual(100);
    expect(stuck.buffered).toBe(0);
    expect(stuck.overflows).toBeGreaterThanOrEqual(1);
    expect(stuck.poll()).toBeNull(); // not live: it reads the log
    for (const s of seen) expect(s).toEqual(range(at + 1, at + 601));
    expect(await readUntil(stuck, at + 601)).toEqual(range(at + 2, at + 601));
    expect(stuck.logReads).toBeGreaterThanOrEqual(2);
    // caught up, it is live again and takes the next commit from the shared buffer
    await store.put('t.kv', { k: 1000, v: 'z' });
    expect(stuck.poll()!.entries.map((e) => e.frame.lsn)).toEqual([at + 602]);
    // every reader got the same decoded frame object: nothing is copied per reader
    const x = live[0].poll()!.entries;
    const y = live[1].poll()!.entries;
    expect(x.map((e) => e.frame.lsn)).toEqual([at + 602]);
    expect(x[0]).toBe(y[0]);
    // poll(upTo): nothing after a window's bound; what follows stays in the buffer for the next poll
    for (let i = 0; i < 3; i++) await store.put('t.kv', { k: 3000 + i, v: 'u' });
    expect(live[2].pollable).toBe(true);
    expect(live[2].poll(at + 602)!.entries.map((e) => e.frame.lsn)).toEqual([at + 602]);
    expect(live[2].poll(at + 602)).toBeNull();
    expect(live[2].poll(at + 604)!.entries.map((e) => e.frame.lsn)).toEqual([at + 603, at + 604]);
    expect(live[2].poll()!.entries.map((e) => e.frame.lsn)).toEqual([at + 605]);
    expect(live[2].pollable).toBe(false);
    expect(live[2].atEnd).toBe(true);
    for (const f of [...live, stuck]) f.close();
    expect(store.feedStats().memory).toEqual({ frames: 0, bytes: 0 }); // no reader: nothing kept
  });

  it('the shared buffer drops what every reader has taken, and keeps (up to its bound) what one still needs', async () => {
    store = await TenantStore.open({ dir, sync: false, feedTailFrames: 1000 });
    await store.registerSchema(T);
    const at = store.lastLsn;
    const feeds = Array.from({ length: 10 }, () => store.changesFrom({ epoch: 0, lsn: at }, { bufferFrames: 500 }));
    const firsts = feeds.map((f) => f.next());
    await store.put('t.kv', { k: 0, v: 'x' });
    await Promise.all(firsts);
    let most = 0;
    for (let i = 1; i <= 300; i++) {
      await store.put('t.kv', { k: i, v: 'y' });
      for (const f of feeds) expect(f.poll()!.entries.map((e) => e.frame.lsn)).toEqual([at + 1 + i]);
      most = Math.max(most, store.feedStats().memory.frames);
    }
    // every reader takes each frame at once: the buffer never holds more than one pass's worth (64 frames)
    expect(most).toBeLessThanOrEqual(65);
    // one reader stops: the frames after its position stay for it, in order, once
    const [slow, ...rest] = feeds;
    for (let i = 301; i <= 500; i++) {
      await store.put('t.kv', { k: i, v: 'z' });
      for (const f of rest) f.poll();
    }
    expect(store.feedStats().memory.frames).toBeGreaterThanOrEqual(200);
    const got: number[] = [];
    for (let b = slow.poll(); b; b = slow.poll()) got.push(...b.entries.map((e) => e.frame.lsn));
    expect(got).toEqual(range(at + 302, at + 501));
    expect(slow.logReads).toBe(1); // its first read only: the rest came from the buffer
    for (const f of feeds) f.close();
  });

  it('poll() hands over the buffered live frames without waiting, and none before the first next() or after an overflow', async () => {
    store = await TenantStore.open({ dir, sync: false });
    await store.registerSchema(T);
    for (let i = 0; i < 3; i++) await store.put('t.kv', { k: i, v: 'a' });
    const feed = store.changesFrom({ epoch: 0, lsn: 1 }, { bufferFrames: 4, maxLagFrames: 10 });
    expect(feed.poll()).toBeNull(); // the cursor is checked and the log read by next() first
    expect(feed.atEnd).toBe(false);
    expect(await readUntil(feed, 4)).toEqual([2, 3, 4]);
    expect(feed.atEnd).toBe(true); // live, nothing buffered: next() would wait for a commit
    expect(feed.poll()).toBeNull();
    await store.put('t.kv', { k: 10, v: 'b' });
    await store.put('t.kv', { k: 11, v: 'b' });
    expect(feed.atEnd).toBe(false);
    const b = feed.poll()!;
    expect(b.entries.map((e) => e.frame.lsn)).toEqual([5, 6]);
    expect(b.cursor.lsn).toBe(6);
    expect(feed.poll()).toBeNull();
    // an overflow leaves the reader not live: poll answers nothing, next() reads the log
    for (let i = 0; i < 6; i++) await store.put('t.kv', { k: 20 + i, v: 'c' });
    expect(feed.poll()).toBeNull();
    expect(feed.atEnd).toBe(false);
    expect(await readUntil(feed, 12)).toEqual(range(7, 12));
    feed.close();
    // past its lag bound, poll answers resync_required as next() would
    const lagging = store.changesFrom({ epoch: 0, lsn: store.lastLsn - 1 }, { bufferFrames: 100, maxLagFrames: 5 });
    expect(await readUntil(lagging, store.lastLsn)).toEqual([store.lastLsn]);
    for (let i = 0; i < 3; i++) await store.put('t.kv', { k: 30 + i, v: 'd' });
    expect(lagging.poll()!.entries.length).toBe(3);
    for (let i = 0; i < 8; i++) await store.put('t.kv', { k: 40 + i, v: 'e' });
    expect(() => lagging.poll()).toThrow(expect.objectContaining({ code: 'resync_required' }) as unknown as Error);
  });

  it('readers at the same position taking the same frames share one array and batch (one slice per window, not per reader)', async () => {
    store = await TenantStore.open({ dir, sync: false });
    await store.registerSchema(T);
    const at = store.lastLsn;
    const feeds = Array.from({ length: 5 }, () => store.changesFrom({ epoch: 0, lsn: at }, { bufferFrames: 100 }));
    const firsts = feeds.map((f) => f.next());
    await store.put('t.kv', { k: 0, v: 'x' });
    await Promise.all(firsts);
    for (let i = 1; i <= 4; i++) await store.put('t.kv', { k: i, v: 'y' });
    // a window's bound at at+4: every reader takes at+2..at+4, the same array
    const batch = feeds[0].poll(at + 4)!;
    const first = batch.entries;
    expect(first.map((e) => e.frame.lsn)).toEqual(range(at + 2, at + 4));
    expect(batch.cursor).toEqual({ epoch: 0, lsn: at + 4 });
    // (the batch too: the frames and the cursor after them, one object for every reader)
    for (const f of feeds.slice(1)) expect(f.poll(at + 4)).toBe(batch);
    // the next window: other frames, another array, shared again; each reader's own position moved on
    const second = feeds.map((f) => f.poll()!.entries);
    expect(second[0].map((e) => e.frame.lsn)).toEqual([at + 5]);
    expect(second[0]).not.toBe(first);
    for (const e of second) expect(e).toBe(second[0]);
    for (const f of feeds) expect(f.cursor.lsn).toBe(at + 5);
    // a reader behind the others asks for other frames: its own slice, the right ones
    const late = store.changesFrom({ epoch: 0, lsn: at + 3 }, { bufferFrames: 100 });
    const b = await late.next();
    expect(b!.entries.map((e) => e.frame.lsn)).toEqual([at + 4, at + 5]);
    // once every reader took them, the buffer drops its frames and the kept slice with them
    for (let i = 0; i < 70; i++) {
      await store.put('t.kv', { k: 100 + i, v: 'z' });
      for (const f of [...feeds, late]) expect(f.poll()!.entries.map((e) => e.frame.lsn)).toEqual([at + 6 + i]);
    }
    expect(store.feedStats().memory.frames).toBeLessThan(70);
    for (const f of [...feeds, late]) f.close();
    expect(store.feedStats().memory).toEqual({ frames: 0, bytes: 0 });
  });

  it('tells a cursor from rewritten history to resync: another epoch at its LSN, or past the log end', async () => {
    store = await TenantStore.open({ dir });
    await store.registerSchema(T);
    await store.put('t.kv', { k: 1, v: 'a' });
    await store.setEpoch(4);
    await store.put('t.kv', { k: 2, v: 'b' });
    await expect(store.changesFrom({ epoch: 0, lsn: 3 }).next()).rejects.toMatchObject({ code: 'resync_required', details: { reason: 'epoch' } });
    await expect(store.changesFrom({ epoch: 4, lsn: 9 }).next()).rejects.toMatchObject({ code: 'resync_required', details: { reason: 'ahead' } });
    const ok = store.changesFrom({ epoch: 0, lsn: 2 });
    const b = (await ok.next())!;
    expect(b.cursor).toEqual({ epoch: 4, lsn: 3 });
    ok.close();
    await store.close();
    store = await TenantStore.open({ dir }); // the epoch history survives a restart
    await expect(store.changesFrom({ epoch: 4, lsn: 2 }).next()).rejects.toMatchObject({ details: { reason: 'epoch' } });
    const again = store.changesFrom({ epoch: 4, lsn: 3 });
    const pending = again.next();
    await store.put('t.kv', { k: 3, v: 'c' });
    expect((await pending)!.cursor).toEqual({ epoch: 4, lsn: 4 });
    again.close();
  });
});

describe('row changes in the log carry their before image', () => {
  it('logs the replaced row on an update and the deleted row on a delete (not on an insert), and decodes them from the log', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'feed-old-'));
    const store = await TenantStore.open({ dir });
    try {
      await store.registerSchema(T);
      await store.put('t.kv', { k: 1, v: 'a' });
      await store.put('t.kv', { k: 1, v: 'b' });
      await store.delete('t.kv', [1]);
      await store.commit({ changes: [{ op: 'delete', schema: 't.kv', pk: [2] }] }); // absent: nothing logged for it
      const feed = store.changesFrom({ epoch: 0, lsn: 1 });
      const b = await feed.next();
      feed.close();
      const changes = b!.entries.map((e) => e.frame.changes[0]);
      expect(changes[0]).toEqual({ op: 'put', schema: 't.kv', pk: [1], version: 1, values: { k: 1, v: 'a' } });
      expect(changes[1]).toEqual({ op: 'put', schema: 't.kv', pk: [1], version: 2, values: { k: 1, v: 'b' }, old: { k: 1, v: 'a' } });
      expect(changes[2]).toEqual({ op: 'delete', schema: 't.kv', pk: [1], old: { k: 1, v: 'b' } });
      expect(store.epochOf(2)).toBe(store.epochOf(1));
      expect(store.epochOf(store.lastLsn + 1)).toBeUndefined();
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
