/**
 * A process killed (SIGKILL) while it writes and checkpoints: the next open loads the last
 * checkpoint that was committed whole (or rebuilds, never a torn one), replays the frames after
 * it, and holds exactly what the keys say: the same statistics, document frequencies and
 * scores as an index rebuilt from the keys, and verify is clean.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { TenantStore, keyOf } from '@mmdb/storage';
import { FtsParticipant } from '@mmdb/fts';
import { PAPERS, crash, text } from './restart-fixtures';

jest.setTimeout(120_000);
const root = join(__dirname, '../../..');
const PLAIN = { feedback: 'none', proximity: 'none', queryStopwords: 'none' } as const;
const RARE = Array.from({ length: 25 }, (_, i) => `r${i * 37}`);

function runChild(dir: string, killAfterMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-r', '@swc-node/register', join(__dirname, 'checkpoint-crash-child.ts'), dir], {
      cwd: root,
      env: { ...process.env, SWC_NODE_PROJECT: join(root, 'tsconfig.base.json') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    let timer: NodeJS.Timeout | undefined;
    child.stdout.on('data', (d) => {
      out += d;
      if (!timer && out.includes('READY\n')) timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    });
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code, signal) => (signal === 'SIGKILL' ? resolve() : reject(new Error(`child ended by itself (code ${code}): ${err}`))));
  });
}

/** What the index says: totals, every rare word's df and its scores by doc. */
async function facts(fts: FtsParticipant) {
  const out: Record<string, unknown> = { stats: fts.fieldStats('lib.papers', 'body') };
  for (const w of RARE) {
    const hits = await fts.search('lib.papers', 'body', w, 1000, PLAIN);
    out[w] = [fts.docFreq('lib.papers', 'body', w), Object.fromEntries(hits.map((h) => [h.doc_id, Number(h.score.toFixed(9))]))];
  }
  return out;
}

describe('fts checkpoint under SIGKILL', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fts-ckpt-crash-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('opens from a whole checkpoint and agrees with a rebuild from the keys, over several kills', async () => {
    let fts = new FtsParticipant();
    let store = await TenantStore.open({ dir, participants: [fts], sync: false, checkpointFrames: 0, checkpointMs: 0 });
    await store.registerSchema(PAPERS);
    for (let i = 0; i < 20_000; i += 5_000) {
      const changes = [];
      for (let j = i; j < i + 5_000; j++) changes.push({ op: 'put' as const, schema: 'lib.papers', row: { id: j, body: text(j) } });
      await store.commit({ changes });
    }
    await store.close();
    for (const killAfter of [30, 150, 400, 900]) {
      await runChild(dir, killAfter);
      fts = new FtsParticipant();
      store = await TenantStore.open({ dir, participants: [fts], sync: false, checkpointFrames: 0, checkpointMs: 0 });
      expect([fts.stats.openedFrom, fts.stats.fallback]).toEqual(['checkpoint', null]);
      const fromImage = await facts(fts);
      expect((await store.verify()).ok).toBe(true);
      await crash(store);
      // the reference: the same keys without the image (its record removed: the open rebuilds)
      const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
      await db.open();
      await db.del(keyOf('F', [null, 'checkpoint']));
      await db.close();
      fts = new FtsParticipant();
      store = await TenantStore.open({ dir, participants: [fts], sync: false, checkpointFrames: 0, checkpointMs: 0 });
      expect(fts.stats.openedFrom).toBe('keys');
      expect(await facts(fts)).toEqual(fromImage);
      await store.close(); // writes a fresh image for the next round
    }
  });
});
