import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { ClassicLevel } from 'classic-level';
import { DbError } from '@mmdb/core';
import type { CommitParticipant, CommittedFrame, StoreReader } from './api';
import { keyOf } from './keys';
import { logKey, metaKey } from './records';
import { TenantStore } from './store';

const T = `namespace = "t"
table = "kv"
primary_key = ["k"]
[[columns]]
name = "k"
ty = "i64"
[[columns]]
name = "v"
ty = "str"
[[indexes]]
name = "by_v"
columns = ["v"]
`;

/** An in-memory participant that counts puts, checkpoints that count with its LSN. */
class Counter implements CommitParticipant {
  readonly name = 'counter';
  count = 0;
  lsn = 0;
  applied: number[] = [];
  apply(f: CommittedFrame): void {
    this.count += f.changes.filter((c) => c.op === 'put').length;
    this.lsn = f.lsn;
    this.applied.push(f.lsn);
  }
  async open(store: StoreReader): Promise<number> {
    const snap = store.snapshot();
    const v = await snap.rawGet(keyOf('M', ['ckpt', 'counter']));
    await snap.release();
    if (!v) return 0;
    ({ count: this.count, lsn: this.lsn } = JSON.parse(v.toString()));
    return this.lsn;
  }
  async checkpoint(store: StoreReader): Promise<number> {
    await store.writeCheckpoint([{ key: keyOf('M', ['ckpt', 'counter']), value: Buffer.from(JSON.stringify({ count: this.count, lsn: this.lsn })) }]);
    return this.lsn;
  }
}

describe('recovery, checkpoints, segments, verify', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'recovery-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function fill(store: TenantStore, from: number, n: number) {
    for (let i = from; i < from + n; i++) await store.put('t.kv', { k: i, v: `v${i % 3}` });
  }

  it('loads a checkpoint and replays only the frames after it', async () => {
    let c = new Counter();
    let store = await TenantStore.open({ dir, participants: [c] });
    await store.registerSchema(T);
    await fill(store, 0, 5);
    await store.checkpoint();
    const at = store.lastLsn;
    await fill(store, 5, 3);
    // Simulate a crash after the checkpoint: close the db without a new checkpoint.
    await (store as unknown as { db: ClassicLevel<Buffer, Buffer> }).db.close();
    c = new Counter();
    store = await TenantStore.open({ dir, participants: [c] });
    expect(c.count).toBe(8);
    expect(c.applied).toEqual([at + 1, at + 2, at + 3]);
    expect(store.recovery.replayed).toEqual({ counter: 3 });
    expect(store.maintenance.lastCheckpointLsn).toBe(at); // the frames it replayed count toward the next one
    // the tail's frames the checkpoint covers are verified (checksum) but not decoded: only the replay is
    expect(store.recovery.framesVerified).toBe(at + 3);
    expect(store.recovery.framesDecoded).toBe(3);
    await store.close();
  });

  it('verifies the covered tail by checksum without decoding it: a flipped byte there still refuses the open', async () => {
    const c = new Counter();
    let store = await TenantStore.open({ dir, participants: [c] });
    await store.registerSchema(T);
    await fill(store, 0, 4);
    await store.checkpoint();
    const mid = store.lastLsn - 1;
    await store.close();
    const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    const bad = Buffer.from((await db.get(logKey(mid)))!);
    bad[bad.length - 3] ^= 0x01;
    await db.put(logKey(mid), bad);
    await db.close();
    const e = await TenantStore.open({ dir, participants: [new Counter()] }).catch((x) => x);
    expect(e.code).toBe('corrupt_log');
    expect(e.details.corrupt).toEqual([mid]);
    store = undefined as never;
  });

  it('verifies the covered tail newest first within verifyTailBytes: an old bad frame past the budget does not stop the open, the newest is always checked', async () => {
    let store = await TenantStore.open({ dir, participants: [new Counter()] });
    await store.registerSchema(T);
    await fill(store, 0, 40);
    await store.checkpoint(); // covers every frame: the whole log is the unreplayed tail
    const last = store.lastLsn;
    await store.close();
    const flip = async (lsn: number) => {
      const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
      const bad = Buffer.from((await db.get(logKey(lsn)))!);
      bad[bad.length - 3] ^= 0x01;
      await db.put(logKey(lsn), bad);
      await db.close();
    };
    await flip(3);
    // the default budget (16 MiB) holds this whole log: the bad frame refuses the open
    const e = await TenantStore.open({ dir, participants: [new Counter()] }).catch((x) => x);
    expect([e.code, e.details.corrupt]).toEqual(['corrupt_log', [3]]);
    // a budget of a few frames checks only the newest ones
    store = await TenantStore.open({ dir, participants: [new Counter()], verifyTailBytes: 1_000 });
    expect(store.recovery.framesVerified).toBeGreaterThan(0);
    expect(store.recovery.framesVerified).toBeLessThan(last - 3);
    await store.close();
    await flip(last);
    const e2 = await TenantStore.open({ dir, participants: [new Counter()], verifyTailBytes: 1 }).catch((x) => x);
    expect([e2.code, e2.details.corrupt]).toEqual(['corrupt_log', [last]]);
    store = undefined as never;
  });

  it('loads the participants’ checkpoints concurrently, reports the open’s phases, then calls afterOpen', async () => {
    const events: string[] = [];
    let bStarted!: () => void;
    const started = new Promise<void>((r) => (bStarted = r));
    const a: CommitParticipant = {
      name: 'a',
      async open() {
        events.push('a open');
        // b's open must start while a's is still loading (sequential opens would time out here)
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([started, new Promise((_, no) => (timer = setTimeout(() => no(new Error('b did not start while a loaded')), 5_000)))]);
        clearTimeout(timer);
        events.push('a loaded');
        return 0;
      },
      afterOpen: () => events.push('a afterOpen'),
    };
    const b: CommitParticipant = {
      name: 'b',
      async open() {
        events.push('b open');
        bStarted();
        return 0;
      },
      afterOpen: () => events.push('b afterOpen'),
    };
    let store = await TenantStore.open({ dir });
    await store.registerSchema(T);
    await fill(store, 0, 3);
    await store.close();
    store = await TenantStore.open({ dir, participants: [a, b] });
    expect(events).toEqual(['a open', 'b open', 'a loaded', 'a afterOpen', 'b afterOpen']);
    const phases = store.recovery.phases;
    expect(phases.map((p) => p.name)).toEqual(['leveldb open', 'catalog', 'log index', 'verify log tail', 'open a', 'open b', 'read replay', 'replay']);
    for (const [i, p] of phases.entries()) {
      expect(p.end).toBeGreaterThanOrEqual(p.start);
      if (i > 0) expect(p.start).toBeGreaterThanOrEqual(phases[i - 1].start); // in order of start
    }
    const at = (n: string) => phases.find((p) => p.name === n)!;
    // the loads and the tail's check overlap; the replay's reading starts after all of them
    expect(at('open b').start).toBeLessThan(at('open a').end);
    expect(at('verify log tail').start).toBeLessThan(at('open a').end);
    expect(at('read replay').start).toBeGreaterThanOrEqual(Math.max(at('open a').end, at('verify log tail').end));
    expect(store.recovery.replayed).toEqual({ a: 4, b: 4 }); // schema + 3 puts, after LSN 0
    await store.close();
  });

  it('detects a corrupt tail by checksum, refuses to open, and drops it only when asked', async () => {
    let store = await TenantStore.open({ dir });
    await store.registerSchema(T);
    await fill(store, 0, 4);
    const last = store.lastLsn;
    await store.close();
    const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    const frame = (await db.get(logKey(last)))!;
    const bad = Buffer.from(frame);
    bad[bad.length - 1] ^= 0xff;
    await db.put(logKey(last), bad);
    await db.close();

    const e = await TenantStore.open({ dir }).catch((x) => x);
    expect(e).toBeInstanceOf(DbError);
    expect(e.code).toBe('corrupt_log');
    expect(e.details.corrupt).toEqual([last]);

    store = await TenantStore.open({ dir, onCorruptTail: 'truncate' });
    expect(store.recovery.corrupt).toEqual([last]);
    expect(store.lastLsn).toBe(last - 1);
    await store.put('t.kv', { k: 100, v: 'x' });
    expect(store.lastLsn).toBe(last);
    await store.close();
  });

  it('refuses to open over a corrupt frame in the middle of the log, even with truncate', async () => {
    let store = await TenantStore.open({ dir });
    await store.registerSchema(T);
    await fill(store, 0, 4);
    const mid = store.lastLsn - 2;
    await store.close();
    const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    await db.put(logKey(mid), Buffer.from([1, 0, 0, 0, 1, 0, 0, 0, 0, 7]));
    await db.close();
    const e = await TenantStore.open({ dir, onCorruptTail: 'truncate' }).catch((x) => x);
    expect(e.code).toBe('corrupt_log');
    expect(e.details.corrupt).toEqual([mid]);
    store = undefined as never;
  });

  it('numbers frames into segments and truncates only what every checkpoint and follower covers', async () => {
    const c = new Counter();
    const store = await TenantStore.open({ dir, participants: [c], segmentFrames: 4 });
    await store.registerSchema(T); // lsn 1
    await fill(store, 0, 11); // lsn 2..12 → segments 0,1,2
    expect(store.segments.list().map((s) => [s.segment, s.first, s.last, s.frames])).toEqual([
      [0, 1, 4, 4],
      [1, 5, 8, 4],
      [2, 9, 12, 4],
    ]);
    // No checkpoint yet: the counter still needs everything.
    expect(await store.truncateLog()).toEqual([]);
    await store.checkpoint(); // covers lsn 12
    await store.registerFollower('f1', 6);
    expect(await store.truncateLog()).toEqual([0]); // the follower still needs 7..
    await store.registerFollower('f1', 12);
    expect(await store.truncateLog()).toEqual([1]); // never the newest segment
    const lsns: number[] = [];
    for await (const f of store.frames(1)) lsns.push(f.lsn);
    expect(lsns).toEqual([9, 10, 11, 12]);
    await store.close();
  });

  it('checkpoints and drops old segments in the background once checkpointFrames are past the last checkpoint, and reopens whole', async () => {
    let c = new Counter();
    let store = await TenantStore.open({ dir, participants: [c], segmentFrames: 4, checkpointFrames: 10, checkpointMs: 0 });
    await store.registerSchema(T); // lsn 1
    await fill(store, 0, 6); // lsn 7: fewer than 10 frames since open, nothing happens
    await new Promise((r) => setTimeout(r, 1_300));
    expect(store.maintenance.checkpoints).toBe(0);
    expect(store.segments.list()[0].segment).toBe(0);
    await fill(store, 6, 14); // lsn 21: 21 frames past the checkpoint at open (0)
    const t0 = Date.now();
    while (store.maintenance.checkpoints === 0 && Date.now() - t0 < 5_000) await new Promise((r) => setTimeout(r, 50));
    expect(store.maintenance).toMatchObject({ checkpoints: 1, lastCheckpointLsn: 21, lastError: null });
    // segments 0..4 hold lsn 1..20; the checkpoint covers 21, the newest segment (5: lsn 21) stays
    expect(store.maintenance.segmentsDropped).toBe(5);
    expect(store.segments.list().map((x) => x.segment)).toEqual([5]);
    // writes go on after it; a reopen replays only the frames after the counter's checkpoint
    await fill(store, 20, 3); // lsn 22..24
    await store.close();
    // as if the process had died before its close-time checkpoint: the background one is the last
    const raw = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    await raw.put(keyOf('M', ['ckpt', 'counter']), Buffer.from(JSON.stringify({ count: 20, lsn: 21 })));
    await raw.close();
    c = new Counter();
    store = await TenantStore.open({ dir, participants: [c], segmentFrames: 4, checkpointFrames: 0, checkpointMs: 0 });
    expect(c.count).toBe(23);
    expect(c.applied).toEqual([22, 23, 24]);
    expect(store.recovery.replayed).toEqual({ counter: 3 });
    expect(store.maintenance.lastCheckpointLsn).toBe(21); // the frames it replayed count toward the next one
    let n = 0;
    for await (const batch of store.snapshot().scanRows('t.kv')) n += batch.length;
    expect(n).toBe(23);
    await store.close();
  });

  it('keeps the segment size it was created with when reopened with another', async () => {
    let store = await TenantStore.open({ dir, segmentFrames: 4 });
    await store.registerSchema(T);
    await fill(store, 0, 5); // lsn 6
    await store.close();
    store = await TenantStore.open({ dir, segmentFrames: 1000 });
    expect(store.segments.framesPerSegment).toBe(4);
    await fill(store, 5, 3); // lsn 7..9
    expect(store.segments.list().map((x) => [x.segment, x.first, x.last])).toEqual([[0, 1, 4], [1, 5, 8], [2, 9, 9]]);
    await store.close();
  });

  it('checkpoints in the background after checkpointMs when frames came in, and not when none did', async () => {
    const c = new Counter();
    const store = await TenantStore.open({ dir, participants: [c], segmentFrames: 4, checkpointFrames: 0, checkpointMs: 100 });
    await new Promise((r) => setTimeout(r, 350));
    expect(store.maintenance.checkpoints).toBe(0); // no frame since open
    await store.registerSchema(T);
    await fill(store, 0, 10); // lsn 11
    const t0 = Date.now();
    // (on a loaded host a first checkpoint may come in the middle of the fill; the next one covers it all)
    while (store.maintenance.lastCheckpointLsn < 11 && Date.now() - t0 < 5_000) await new Promise((r) => setTimeout(r, 20));
    expect(store.maintenance.checkpoints).toBeGreaterThanOrEqual(1);
    expect(store.maintenance.lastCheckpointLsn).toBe(11);
    expect(store.segments.list().map((x) => x.segment)).toEqual([2]);
    await store.close();
  });

  it('verify reports a missing, an extra and a changed derived key', async () => {
    const store = await TenantStore.open({ dir });
    await store.registerSchema(T);
    await fill(store, 0, 6);
    expect(await store.verify()).toMatchObject({ ok: true, rows: 6 });
    const idx = (v: string, k: number) => keyOf('I', ['t.kv', 'by_v', v, k]);
    await store.db.del(idx('v1', 1));
    await store.db.put(idx('zz', 99), Buffer.alloc(0));
    await store.db.put(idx('v2', 2), Buffer.from('junk'));
    const r = await store.verify();
    expect(r.ok).toBe(false);
    expect(r.differences.map((d) => d.kind).sort()).toEqual(['different', 'extra', 'missing']);
    await store.close();
  });

  it('finishes a schema drop that a crash interrupted', async () => {
    let store = await TenantStore.open({ dir });
    await store.registerSchema(T);
    await fill(store, 0, 3);
    const manifest = store.manifest('t.kv')!;
    await store.close();
    // A crash right after the drop frame: catalog entry gone, marker written, keys not yet cleared.
    const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    await db.batch([
      { type: 'del', key: metaKey('schema', 't.kv') },
      { type: 'put', key: metaKey('dropping', 't.kv'), value: Buffer.from(JSON.stringify(manifest)) },
    ]);
    await db.close();
    store = await TenantStore.open({ dir });
    expect(store.recovery.finishedDrops).toEqual(['t.kv']);
    const left = await store.db.keys({ gte: keyOf('R', ['t.kv']), lt: keyOf('S', []) }).all();
    expect(left).toEqual([]);
    await store.close();
  });

  it('refuses writes with 503 when free disk space is under the floor, and reports it in health', async () => {
    const store = await TenantStore.open({ dir, minFreeBytes: Number.MAX_SAFE_INTEGER });
    const e = await store.registerSchema(T).catch((x) => x);
    expect(e.code).toBe('service_unavailable');
    expect(e.retry).toBe(true);
    expect(await store.health()).toMatchObject({ writable: false, pressure: 'disk_full' });
    await store.close();
  });

  it('refuses requests beyond the queue limit with 503, and commits the rest', async () => {
    const store = await TenantStore.open({ dir, queueLimit: 4 });
    await store.registerSchema(T);
    const rs = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => store.put('t.kv', { k: i, v: 'x' })));
    const refused = rs.filter((r) => r.status === 'rejected');
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) expect((r as PromiseRejectedResult).reason.code).toBe('service_unavailable');
    const snap = store.snapshot();
    let n = 0;
    for await (const b of snap.scanRows('t.kv')) n += b.length;
    await snap.release();
    expect(n).toBe(rs.length - refused.length);
    await store.close();
  });
});

describe('frameKeyWrites', () => {
  it('rebuilds exactly the keys a commit wrote, row keys included', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fkw-'));
    const store = await TenantStore.open({ dir });
    await store.registerSchema(T);
    await store.put('t.kv', { k: 1, v: 'a' });
    const before = store.lastLsn;
    await store.commit({ changes: [{ op: 'put', schema: 't.kv', row: { k: 1, v: 'b' } }, { op: 'put', schema: 't.kv', row: { k: 2, v: 'c' } }] });
    await store.delete('t.kv', [2]);
    const { frameKeyWrites } = await import('./records');
    const applied = new Map<string, Buffer | null>();
    for await (const f of store.frames(before + 1)) for (const w of frameKeyWrites(f)) applied.set(w.key.toString('hex'), w.value);
    for (const [hex, v] of applied) {
      const actual = await store.db.get(Buffer.from(hex, 'hex'));
      expect([hex, actual ? actual.toString('hex') : null]).toEqual([hex, v ? v.toString('hex') : null]);
    }
    expect([...applied.keys()].filter((k) => k.startsWith('52'))).toHaveLength(2);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
