/**
 * Storage commit benchmark (issue: durable tenant store).
 *
 *   npm run bench:storage            (about a minute; BENCH_SECONDS=N per measurement, default 4)
 *
 * Measures, on a real classic-level store on disk with sync: true:
 * - durable single-row commits/s through TenantStore.put at 1, 16 and 64 concurrent callers;
 * - rows/s committing batches of 1,000 rows (one commit, one frame each);
 * each row with one secondary index, beside the ceiling of this machine: a raw
 * classic-level loop of `batch(..., { sync: true })` writing the same row and index keys
 * in batches of the same sizes, measured in the same run.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'fs';
import { join } from 'path';
import { ClassicLevel } from 'classic-level';
import { TenantStore, keyOf } from '@mmdb/storage';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const base = join(__dirname, '../../../tmp');

const SCHEMA = `namespace = "bench"
table = "kv"
primary_key = ["k"]
[[columns]]
name = "k"
ty = "i64"
[[columns]]
name = "v"
ty = "str"
[[columns]]
name = "n"
ty = "i64"
[[indexes]]
name = "by_v"
columns = ["v"]
`;

function tmp(name: string): string {
  mkdirSync(base, { recursive: true });
  return mkdtempSync(join(base, `bench-${name}-`));
}

async function timed(fn: (stop: () => boolean) => Promise<number>): Promise<{ n: number; s: number }> {
  const t0 = performance.now();
  const end = t0 + SECONDS * 1000;
  const n = await fn(() => performance.now() >= end);
  return { n, s: (performance.now() - t0) / 1000 };
}

async function storeSingles(callers: number): Promise<number> {
  const dir = tmp(`s${callers}`);
  const store = await TenantStore.open({ dir });
  await store.registerSchema(SCHEMA);
  let next = 0;
  const r = await timed(async (stop) => {
    let n = 0;
    await Promise.all(
      Array.from({ length: callers }, async () => {
        while (!stop()) {
          const k = next++;
          await store.put('bench.kv', { k, v: `v${k % 100}`, n: k });
          n++;
        }
      }),
    );
    return n;
  });
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return r.n / r.s;
}

async function storeBatches(size: number): Promise<number> {
  const dir = tmp(`b${size}`);
  const store = await TenantStore.open({ dir });
  await store.registerSchema(SCHEMA);
  let next = 0;
  const r = await timed(async (stop) => {
    let n = 0;
    while (!stop()) {
      const changes = Array.from({ length: size }, () => {
        const k = next++;
        return { op: 'put' as const, schema: 'bench.kv', row: { k, v: `v${k % 100}`, n: k } };
      });
      await store.commit({ changes });
      n += size;
    }
    return n;
  });
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return r.n / r.s;
}

/** The ceiling: raw sync batches of the same row + index keys, no log, no checks. */
async function rawLoop(size: number): Promise<number> {
  const dir = tmp(`raw${size}`);
  const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  let next = 0;
  const r = await timed(async (stop) => {
    let n = 0;
    while (!stop()) {
      // A chained batch: the fastest way classic-level takes a batch (the array form costs more per key).
      const batch = db.batch();
      for (let i = 0; i < size; i++) {
        const k = next++;
        batch.put(keyOf('R', ['bench.kv', k]), Buffer.from(JSON.stringify([1, k, { k, v: `v${k % 100}`, n: k }])));
        batch.put(keyOf('I', ['bench.kv', 'by_v', `v${k % 100}`, k]), Buffer.alloc(0));
      }
      await batch.write({ sync: true });
      n += size;
    }
    return n;
  });
  await db.close();
  rmSync(dir, { recursive: true, force: true });
  return r.n / r.s;
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

async function main(): Promise<void> {
  console.log(`storage commit benchmark: ${SECONDS}s per measurement, sync: true, one secondary index, data under ${base}`);
  const raw1 = await rawLoop(1);
  const s1 = await storeSingles(1);
  const s16 = await storeSingles(16);
  const s64 = await storeSingles(64);
  const raw1000 = await rawLoop(1000);
  const b1000 = await storeBatches(1000);
  const rows = [
    ['single-row commits, 1 caller', s1, raw1],
    ['single-row commits, 16 callers', s16, raw1],
    ['single-row commits, 64 callers', s64, raw1],
    ['rows in batches of 1,000', b1000, raw1000],
  ] as const;
  console.log('');
  console.log('| workload | ours rows/s | raw classic-level sync loop rows/s (same batch size) | ours / raw |');
  console.log('|---|---:|---:|---:|');
  for (const [name, ours, raw] of rows) console.log(`| ${name} | ${fmt(ours)} | ${fmt(raw)} | ${(ours / raw).toFixed(2)} |`);
  console.log('');
  console.log(`64 callers / 1 caller: ${(s64 / s1).toFixed(1)}x (target >= 10x); 64 callers: ${fmt(s64)} commits/s (target >= 20,000)`);
  console.log(`batches of 1,000: ${((b1000 / raw1000) * 100).toFixed(0)}% of the raw loop (target >= 50%)`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
