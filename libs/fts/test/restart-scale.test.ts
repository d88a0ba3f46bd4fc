/**
 * Restart at scale: after a checkpoint, opening a store of 100,000 full-text documents decodes
 * no more doc entries than opening one of 10,000 (none: the image is loaded, only the frames
 * after it are replayed). Counted work, not wall time (the machine is shared).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TenantStore } from '@mmdb/storage';
import { FtsParticipant } from '@mmdb/fts';
import { PAPERS as MANIFEST, crash } from './restart-fixtures';

jest.setTimeout(120_000);


const word = (n: number) => `w${n}`;
/** Short docs of a skewed vocabulary (a few common words, many rare ones). */
const text = (i: number) => `${word(i % 7)} ${word(i % 97)} ${word((i * 31) % 1009)} ${word((i * 17) % 10007)}`;

describe('fts restart at 10,000 and 100,000 documents', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  /** Builds a store of `n` docs, closes it (final checkpoint), writes `after` more docs and reopens. */
  async function restart(n: number, after: number) {
    const dir = mkdtempSync(join(tmpdir(), 'fts-scale-'));
    dirs.push(dir);
    let fts = new FtsParticipant();
    let store = await TenantStore.open({ dir, participants: [fts], sync: false, checkpointFrames: 0, checkpointMs: 0 });
    await store.registerSchema(MANIFEST);
    for (let i = 0; i < n; i += 5_000) {
      const changes = [];
      for (let j = i; j < Math.min(n, i + 5_000); j++) changes.push({ op: 'put' as const, schema: 'lib.papers', row: { id: j, body: text(j) } });
      await store.commit({ changes });
    }
    await store.close();
    fts = new FtsParticipant();
    store = await TenantStore.open({ dir, participants: [fts], sync: false, checkpointFrames: 0, checkpointMs: 0 });
    // frames after the checkpoint: updates and deletes, replayed at the next open
    for (let j = 0; j < after; j++) await store.put('lib.papers', { id: j * 3, body: text(j + n) });
    await store.delete('lib.papers', [1]);
    const before = await fts.search('lib.papers', 'body', 'w3 w40 w500', 10);
    // a crash (no final checkpoint): the next open loads the image and replays the frames after it
    await crash(store);
    fts = new FtsParticipant();
    store = await TenantStore.open({ dir, participants: [fts], sync: false, checkpointFrames: 0, checkpointMs: 0 });
    // the open decodes no long posting list of the image (each is decoded at its first read, or
    // after the open); short ones (≤ 64 postings, a few bytes each) go into the shared slab at open
    const { terms, longLists } = fts.fieldStats('lib.papers', 'body');
    const packedAtOpen = fts.packedLists('lib.papers', 'body');
    // the open does not wait for the champion tiers (built in the background after it): a search
    // right away answers the same (it builds the one list's tier it needs)
    const sameBeforeTiers = JSON.stringify(await fts.search('lib.papers', 'body', 'w3 w40 w500', 10)) === JSON.stringify(before);
    await fts.tiersReady();
    const out = {
      terms,
      longLists,
      packedAtOpen,
      packedAfter: fts.packedLists('lib.papers', 'body'),
      sameBeforeTiers,
      tiersMs: fts.stats.tiersMs,
      openedFrom: fts.stats.openedFrom,
      decoded: fts.stats.entriesDecoded, // at open and in the replay (a fresh participant)
      replayed: store.recovery.replayed.fts,
      same: JSON.stringify(await fts.search('lib.papers', 'body', 'w3 w40 w500', 10)) === JSON.stringify(before),
      live: fts.fieldStats('lib.papers', 'body').liveDocs,
    };
    await store.close();
    return out;
  }

  it('decodes only the replayed frames’ entries, the same at both sizes', async () => {
    const small = await restart(10_000, 20);
    const large = await restart(100_000, 20);
    for (const r of [small, large]) {
      expect(r.openedFrom).toBe('checkpoint');
      expect(r.replayed).toBe(21);
      expect(r.decoded).toBe(20); // the 20 updated docs; the delete decodes nothing
      expect(r.same).toBe(true);
      expect(r.sameBeforeTiers).toBe(true);
      expect(r.tiersMs).toBeGreaterThanOrEqual(0);
      // every list but those the 21 replayed frames changed stays packed through the open; none after the background decoding
      // (a replayed frame changes at most 8 lists: the replaced doc's 4 words and the new doc's 4)
      expect(r.packedAtOpen).toBeGreaterThanOrEqual(r.longLists - 8 * 21);
      expect(r.longLists).toBeGreaterThanOrEqual(97); // w0…w96 at 10,000 docs; w0…w1008 too at 100,000
      expect(r.packedAfter).toBe(0);
    }
    expect(small.live).toBe(9_999);
    expect(large.live).toBe(99_999);
    expect(large.decoded).toBe(small.decoded);
    expect(large.packedAtOpen).toBeGreaterThan(large.longLists * 0.9);
  });
});
