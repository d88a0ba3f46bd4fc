/**
 * Child process of crash.test.ts: opens the store and runs a concurrent write load
 * (single puts, atomic batches, deletes, with a secondary index) until it is killed.
 * Each worker owns its own keys and has at most one request in flight; it writes
 * `SEND <op>` before the request and `ACK <op-id>` after it resolves to a lines file, with
 * `fs.writeSync` (in the kernel before the request goes on, so a written line survives
 * SIGKILL: stdout to a pipe is not enough, a full pipe makes Node queue the write in the
 * process). `READY` goes to stdout, to start the parent's kill timer.
 */
import { openSync, writeSync } from 'fs';
import { TenantStore } from '@mmdb/storage';

const [dir, roundArg, linesPath, workersArg] = process.argv.slice(2);
const linesFd = openSync(linesPath, 'w');
const round = Number(roundArg);
const WORKERS = Number(workersArg ?? 8);
const KEYS_PER_WORKER = 20;

export const SCHEMA = `namespace = "crash"
table = "kv"
primary_key = ["k"]
[[columns]]
name = "k"
ty = "i64"
required = true
[[columns]]
name = "v"
ty = "str"
[[columns]]
name = "op"
ty = "str"
[[indexes]]
name = "by_v"
columns = ["v"]
`;

let seed = round * 7919 + 17;
function rand(n: number): number {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed % n;
}

function out(line: string): void {
  writeSync(linesFd, line + '\n');
}

async function worker(store: TenantStore, w: number): Promise<void> {
  for (let i = 0; ; i++) {
    const id = `${round}.${w}.${i}`;
    const key = () => w * KEYS_PER_WORKER + rand(KEYS_PER_WORKER);
    const kind = rand(10);
    let changes: Array<{ op: 'put'; schema: string; row: { k: number; v: string; op: string } } | { op: 'delete'; schema: string; pk: [number] }>;
    if (kind < 5) changes = [{ op: 'put', schema: 'crash.kv', row: { k: key(), v: `v${rand(5)}`, op: id } }];
    else if (kind < 8) {
      const ks = [...new Set(Array.from({ length: 2 + rand(8) }, key))];
      changes = ks.map((k) => ({ op: 'put' as const, schema: 'crash.kv', row: { k, v: `v${rand(5)}`, op: id } }));
      if (rand(2)) changes.push({ op: 'delete', schema: 'crash.kv', pk: [key()] });
    } else changes = [{ op: 'delete', schema: 'crash.kv', pk: [key()] }];
    out(`SEND ${JSON.stringify({ id, w, changes })}`);
    const r = await store.commit({ changes });
    out(`ACK ${id}`);
    void r;
  }
}

async function main(): Promise<void> {
  const store = await TenantStore.open({ dir });
  if (!store.manifest('crash.kv')) await store.registerSchema(SCHEMA);
  process.stdout.write('READY\n');
  await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(store, w)));
}

main().catch((e) => {
  process.stderr.write(String(e?.stack ?? e) + '\n');
  process.exit(1);
});
