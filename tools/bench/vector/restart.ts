/**
 * Restart of a 100,000-vector table: load through store commits, checkpoint, close, reopen.
 * Prints the open time beside the time the index took to build, and checks answers match.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TenantStore } from '@mmdb/storage';
import { VectorParticipant, rng } from '@mmdb/vector';

const now = () => Number(process.hrtime.bigint()) / 1e6;

export async function main(): Promise<void> {
  const n = Number(process.argv[process.argv.indexOf('--n') + 1]) || 100_000;
  const D = 128;
  const r = rng(42);
  const vec = () => Array.from({ length: D }, () => r() * 2 - 1);
  const dir = mkdtempSync(join(tmpdir(), 'mmdb-vector-restart-'));
  try {
    let vectors = new VectorParticipant();
    let store = await TenantStore.open({ dir, participants: [vectors], sync: false });
    const t0 = now();
    for (let i = 0; i < n; i += 500) {
      const changes = [];
      for (let j = i; j < Math.min(n, i + 500); j++) changes.push(VectorParticipant.put('big', { id: String(j), embedding: vec(), metric: 'l2' }));
      await store.commit({ changes });
    }
    const load = now() - t0;
    const c0 = now();
    await store.checkpoint();
    const ckpt = now() - c0;
    // 1,000 more after the checkpoint: replayed at open
    for (let j = n; j < n + 1000; j += 500) {
      const changes = [];
      for (let i = j; i < j + 500; i++) changes.push(VectorParticipant.put('big', { id: String(i), embedding: vec() }));
      await store.commit({ changes });
    }
    const qs = Array.from({ length: 20 }, vec);
    const before = qs.map((q) => vectors.topk('big', { vector: q, k: 10 }));
    // stop without the closing checkpoint, as a crash would
    await (store as unknown as { db: { close(): Promise<void> } }).db.close();
    const o0 = now();
    vectors = new VectorParticipant();
    store = await TenantStore.open({ dir, participants: [vectors], sync: false });
    const open = now() - o0;
    const same = qs.every((q, i) => JSON.stringify(vectors.topk('big', { vector: q, k: 10 })) === JSON.stringify(before[i]));
    console.log('\n### Restart of a table of', n.toLocaleString(), '× 128 (HNSW) from its checkpoint + 1,000 replayed puts\n');
    console.log('| load + index build ms | checkpoint ms | reopen ms | opened from | frames replayed | kind | same answers |');
    console.log('|---|---|---|---|---|---|---|');
    console.log(`| ${Math.round(load)} | ${Math.round(ckpt)} | ${Math.round(open)} | ${vectors.stats.openedFrom} | ${store.recovery.replayed.vector} | ${vectors.table('big').kind} | ${same} |`);
    await store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
