/**
 * Child process of checkpoint-crash.test.ts: opens the store, then alternates writes (new docs,
 * updates, deletes) with full-text checkpoints until it is killed, so the kill lands in a write,
 * in an image's encoding or in the checkpoint's batch. `READY` on stdout starts the parent's timer.
 */
import { TenantStore } from '@mmdb/storage';
import { FtsParticipant } from '@mmdb/fts';
import { text } from './restart-fixtures';

const [dir] = process.argv.slice(2);

async function main(): Promise<void> {
  const fts = new FtsParticipant();
  const store = await TenantStore.open({ dir, participants: [fts], sync: false, checkpointFrames: 0, checkpointMs: 0 });
  process.stdout.write('READY\n');
  for (let round = 0; ; round++) {
    const changes = [];
    for (let j = 0; j < 300; j++) {
      const id = (round * 7919 + j * 31) % 40_000;
      changes.push(j % 5 === 4 ? { op: 'delete' as const, schema: 'lib.papers', pk: [id] } : { op: 'put' as const, schema: 'lib.papers', row: { id, body: text(id + round) } });
    }
    await store.commit({ changes });
    await store.checkpoint({ final: true });
  }
}

void main();
