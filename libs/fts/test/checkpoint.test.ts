import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { TenantStore, keyOf } from '@mmdb/storage';
import { FtsParticipant } from '@mmdb/fts';
import { PAPERS as MANIFEST, crash, text } from './restart-fixtures';

const PLAIN = { feedback: 'none', proximity: 'none', queryStopwords: 'none' } as const;
const QUERIES = ['shock wave', 'heat transfer', 'laminar', '"boundary layer"', '+flow -jet', 'nozz*', 'plate supersonic heat'];

/** Every query's answer, plain (the default) and reranked (proximity, RM3), plus the standalone field's. */
async function answers(fts: FtsParticipant) {
  const out: unknown[] = [];
  for (const q of QUERIES) {
    out.push(await fts.search('lib.papers', 'body', q, 50, PLAIN));
    out.push(await fts.search('lib.papers', 'body', q, 10, { feedback: 'rm3', proximity: 'bm25tp' }));
  }
  out.push(await fts.search('notes', 'text', 'shock heat', 10, PLAIN));
  out.push(fts.fieldStats('lib.papers', 'body'), fts.fieldStats('notes', 'text'));
  return out;
}

describe('fts checkpoint: open loads the image and replays only the frames after it', () => {
  let dir: string;
  let store: TenantStore;
  let fts: FtsParticipant;
  const open = async () => {
    fts = new FtsParticipant();
    store = await TenantStore.open({ dir, participants: [fts], sync: false, checkpointFrames: 0, checkpointMs: 0 });
  };
  const fill = async (from: number, to: number) => {
    const changes = [];
    for (let i = from; i < to; i++) changes.push({ op: 'put' as const, schema: 'lib.papers', row: { id: i, body: text(i) } });
    await store.commit({ changes });
  };

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fts-ckpt-'));
    await open();
    await store.registerSchema(MANIFEST);
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers the same after deletes and updates between the checkpoint and the restart, and verify stays clean', async () => {
    await fill(0, 300);
    await store.commit({ changes: [FtsParticipant.putDoc('notes', 'text', 'n1', 'shock heat'), FtsParticipant.putDoc('notes', 'text', 'n2', 'heat')] });
    await store.checkpoint();
    expect(fts.stats.checkpoints).toBe(1);
    // after the checkpoint: updates, deletes, new docs, a standalone field's changes
    for (let i = 0; i < 300; i += 7) await store.put('lib.papers', { id: i, body: text(i + 1000) });
    for (let i = 3; i < 300; i += 11) await store.delete('lib.papers', [i]);
    await store.put('lib.papers', { id: 5, body: null });
    await fill(300, 340);
    await store.commit({ changes: [FtsParticipant.deleteDoc('notes', 'text', 'n2'), FtsParticipant.putDoc('notes', 'text', 'n3', 'shock')] });
    const before = await answers(fts);
    const lastLsn = store.lastLsn;
    // a crash: the store is not closed (no final checkpoint); a second handle reopens the files
    await crash(store);
    await open();
    expect(fts.stats.openedFrom).toBe('checkpoint');
    expect(store.recovery.replayed.fts).toBe(lastLsn - fts.stats.checkpointLsn);
    // only the replayed frames' entries are decoded, not the 300 of the image
    expect(fts.stats.entriesDecoded).toBeLessThan(150);
    expect(fts.stats.entriesDecoded).toBeGreaterThan(0);
    expect(await answers(fts)).toEqual(before);
    expect((await store.verify()).ok).toBe(true);
    // a clean close writes a final image: the next open decodes nothing
    await store.close();
    await open();
    expect(fts.stats.openedFrom).toBe('checkpoint');
    expect(fts.stats.entriesDecoded).toBe(0);
    expect(store.recovery.replayed.fts).toBe(0);
    expect(await answers(fts)).toEqual(before);
  });

  it('a damaged or partial checkpoint falls back to the rebuild from the keys; an old store without one opens by rebuilding', async () => {
    await fill(0, 200);
    await store.commit({ changes: [FtsParticipant.putDoc('notes', 'text', 'n1', 'shock heat')] });
    const before = await answers(fts);
    await store.close(); // final checkpoint
    const poke = async (fn: (db: ClassicLevel<Buffer, Buffer>) => Promise<void>) => {
      const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
      await db.open();
      await fn(db);
      await db.close();
    };
    const chunk0 = keyOf('F', [null, 'k', 'lib.papers', 'body', 0]);
    // a flipped byte in a chunk: the checksum catches it
    await poke(async (db) => {
      const v = Buffer.from((await db.get(chunk0)) as Buffer);
      v[v.length >> 1] ^= 0xff;
      await db.put(chunk0, v);
    });
    await open();
    expect(fts.stats.openedFrom).toBe('keys');
    expect(fts.stats.fallback).toMatch(/checksum/);
    expect(fts.stats.openDecoded).toBe(201);
    expect(await answers(fts)).toEqual(before);
    await store.close(); // writes a fresh image over the damaged one
    await open();
    expect(fts.stats.openedFrom).toBe('checkpoint');
    expect(await answers(fts)).toEqual(before);
    await store.close();
    // a chunk missing, then a record of a format this build does not know: both rebuild
    await poke((db) => db.del(chunk0));
    await open();
    expect([fts.stats.openedFrom, fts.stats.fallback]).toEqual(['keys', 'missing chunk of lib.papers/body']);
    expect(await answers(fts)).toEqual(before);
    await store.close();
    const rec = keyOf('F', [null, 'checkpoint']);
    await poke(async (db) => db.put(rec, Buffer.from(JSON.stringify({ ...JSON.parse(((await db.get(rec)) as Buffer).toString()), v: 99 }))));
    await open();
    expect([fts.stats.openedFrom, fts.stats.fallback]).toEqual(['keys', 'format 99']);
    expect(await answers(fts)).toEqual(before);
    await store.close();
    // a store written before checkpoints existed: no record, no chunks
    await poke(async (db) => {
      await db.del(rec);
      for await (const k of db.keys({ gte: keyOf('F', [null, 'k']), lt: keyOf('F', ['']) })) await db.del(k);
    });
    await open();
    expect([fts.stats.openedFrom, fts.stats.fallback]).toEqual(['keys', null]);
    expect(await answers(fts)).toEqual(before);
    expect((await store.verify()).ok).toBe(true);
  });

  it('a dropped table is gone after the restart, and its image with the next checkpoint', async () => {
    await fill(0, 50);
    await store.checkpoint();
    await store.dropSchema('lib.papers');
    await store.checkpoint();
    await store.close();
    await open();
    expect(fts.stats.openedFrom).toBe('checkpoint');
    expect(fts.fieldStats('lib.papers', 'body').liveDocs).toBe(0);
    await store.registerSchema(MANIFEST);
    await fill(0, 5);
    expect(fts.fieldStats('lib.papers', 'body').liveDocs).toBe(5);
  });

  it('a background checkpoint re-images only after enough doc writes, and the log keeps the frames after the image', async () => {
    await fill(0, 100);
    expect(await store.checkpoint()).toEqual({ fts: store.lastLsn });
    const imageLsn = store.lastLsn;
    await store.put('lib.papers', { id: 1, body: 'laminar' });
    expect((await store.checkpoint()).fts).toBe(imageLsn);
    expect(fts.stats.checkpointsSkipped).toBe(1);
    expect((await store.checkpoint({ final: true })).fts).toBe(store.lastLsn);
  });

  it('a checkpoint whose write fails leaves the previous one, and the next one images every field again', async () => {
    await fill(0, 60);
    await store.commit({ changes: [FtsParticipant.putDoc('notes', 'text', 'n1', 'shock heat')] });
    await store.checkpoint();
    await fill(60, 1200); // enough doc writes for a background checkpoint to re-image
    const failing = { ...store, snapshot: () => store.snapshot(), manifests: () => store.manifests(), lastLsn: store.lastLsn, writeCheckpoint: async () => Promise.reject(new Error('disk full')) };
    await expect(fts.checkpoint(failing as never)).rejects.toThrow('disk full');
    const before = await answers(fts);
    await store.close();
    await open();
    expect(fts.stats.openedFrom).toBe('checkpoint');
    expect(fts.stats.fallback).toBeNull();
    expect(await answers(fts)).toEqual(before);
    expect((await store.verify()).ok).toBe(true);
  });
});
