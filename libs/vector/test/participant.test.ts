/**
 * The participant against a real TenantStore (classic-level in a temp dir): standalone
 * puts, manifest rows, the lock rules, delete/replace, same-frame commits, restart from
 * a checkpoint plus replay, and restart without one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TenantStore, keyOf, type CommittedFrame } from '@mmdb/storage';
import { VectorParticipant } from '@mmdb/vector';
import { bruteForce, recall, slice } from './mnist';

jest.setTimeout(120_000);
const data = slice(2500, 10);
let dir: string;

async function open(): Promise<{ store: TenantStore; vectors: VectorParticipant }> {
  const vectors = new VectorParticipant();
  const store = await TenantStore.open({ dir, participants: [vectors], sync: false });
  return { store, vectors };
}

async function putAll(store: TenantStore, table: string, from: number, to: number, metric?: string) {
  for (let i = from; i < to; i += 250) {
    const changes = [];
    for (let j = i; j < Math.min(to, i + 250); j++)
      changes.push(VectorParticipant.put(table, { id: String(j), embedding: data.base[j], metadata: { digit: data.labels[j] }, metric }));
    await store.commit({ changes });
  }
}

/**
 * Stops the store as a crash would (no final checkpoint), reopens it, and checks that the
 * 'digits' table came back from the image at `imaged` plus the replayed frames, with `size`
 * entries and the same answers.
 */
async function crashAndReopen(store: TenantStore, vectors: VectorParticipant, imaged: number, size: number) {
  const before = data.queries.map((q) => vectors.topk('digits', { vector: q, k: 10 }));
  const lsn = store.lastLsn;
  await (store as unknown as { db: { close(): Promise<void> } }).db.close();
  const again = await open();
  expect(again.vectors.stats).toMatchObject({ openedFrom: 'checkpoint', checkpointLsn: imaged });
  expect(again.store.recovery.replayed.vector).toBe(lsn - imaged);
  expect(again.vectors.table('digits').size).toBe(size);
  expect(data.queries.map((q) => again.vectors.topk('digits', { vector: q, k: 10 }))).toEqual(before);
  return again;
}

const errCode = async (p: Promise<unknown> | (() => unknown)) => {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return 'none';
};

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'mmdb-vector-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('standalone table: first put locks dim and metric; topk, filter, delete and replace', async () => {
  const { store, vectors } = await open();
  await putAll(store, 'digits', 0, 2500, 'l2');
  const t = vectors.table('digits');
  expect(t.spec).toMatchObject({ dim: 784, metric: 'l2' });
  expect(t.kind).toBe('hnsw'); // past the exact threshold

  expect(await errCode(store.commit({ changes: [VectorParticipant.put('digits', { id: 'x', embedding: [1, 2, 3] })] }))).toBe('dim_mismatch');
  expect(await errCode(store.commit({ changes: [VectorParticipant.put('digits', { id: 'x', embedding: data.base[0], metric: 'cosine' })] }))).toBe(
    'metric_mismatch',
  );
  expect(await errCode(() => vectors.topk('digits', { vector: data.queries[0], metric: 'dot' }))).toBe('metric_mismatch');
  expect(await errCode(() => vectors.topk('digits', { vector: [1, 2] }))).toBe('dim_mismatch');
  expect(await errCode(() => vectors.topk('nope', { vector: [1, 2] }))).toBe('not_found');
  for (const bad of [{ vector: [] }, { vector: [NaN] }, { vector: ['1'] }, { vector: data.queries[0], k: 0 }, { vector: data.queries[0], k: 1001 }, { vector: data.queries[0], mode: 'turbo' }])
    expect(await errCode(() => vectors.topk('digits', bad))).toBe('validation_failed');

  let r = 0;
  data.queries.forEach((q) => {
    const got = vectors.topk('digits', { vector: q, k: 10 });
    r += recall(got.map((m) => m.id), bruteForce('l2', data.base, q, 10));
  });
  expect(r / data.queries.length).toBeGreaterThanOrEqual(0.95);

  const filtered = vectors.topk('digits', { vector: data.queries[0], k: 10, filter: { digit: 7 }, mode: 'fast' });
  expect(filtered.map((m) => Number(m.id))).toEqual(bruteForce('l2', data.base, data.queries[0], 10, (i) => data.labels[i] === 7));

  const top = vectors.topk('digits', { vector: data.queries[0], k: 1 })[0];
  const del = await store.commit({ changes: [VectorParticipant.delete('digits', top.id)] });
  expect(del.results[0]).toMatchObject({ result: { deleted: true } });
  expect(vectors.topk('digits', { vector: data.queries[0], k: 10 }).map((m) => m.id)).not.toContain(top.id);
  const rep = await store.commit({ changes: [VectorParticipant.put('digits', { id: '5', embedding: data.queries[0], metadata: { digit: -1 } })] });
  expect(rep.results[0]).toMatchObject({ result: { id: '5', created: false } });
  expect(vectors.topk('digits', { vector: data.queries[0], k: 1 })[0]).toEqual({ id: '5', distance: 0, metadata: { digit: -1 } });
  expect(t.size).toBe(2499);
  await store.close();
});

test('default metric is cosine; of two racing first puts with different lengths, one locks and the other is refused', async () => {
  const { store, vectors } = await open();
  const res = await Promise.allSettled([
    store.commit({ changes: [VectorParticipant.put('c', { id: 'a', embedding: [1, 0, 0] })] }),
    store.commit({ changes: [VectorParticipant.put('c', { id: 'b', embedding: [1, 0] })] }),
  ]);
  const won = res.findIndex((r) => r.status === 'fulfilled');
  const lost = res[1 - won];
  expect(won).toBeGreaterThanOrEqual(0);
  expect(lost.status === 'rejected' && (lost.reason as { code: string }).code).toBe('dim_mismatch');
  const t = vectors.table('c');
  expect(t.spec).toMatchObject({ metric: 'cosine', dim: won === 0 ? 3 : 2 });
  const q = won === 0 ? [2, 0, 0] : [2, 0];
  expect(vectors.topk('c', { vector: q })).toEqual([{ id: won === 0 ? 'a' : 'b', distance: 0, metadata: null }]);
  await store.close();
});

const MANIFEST = `
namespace = "img"
table = "digits"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
[[columns]]
name = "label"
ty = "i64"
[[columns]]
name = "emb"
ty = "vector"
dim = 784
[vector]
column = "emb"
dim = 784
metric = "cosine"
`;

test('manifest rows: the vector commits in the row frame; deleting the row deletes it', async () => {
  const { store, vectors } = await open();
  await store.registerSchema(MANIFEST);
  expect(vectors.table('img.digits').spec).toMatchObject({ dim: 784, metric: 'cosine' });
  const frames: CommittedFrame[] = [];
  const sub = store.changes.subscribe((f) => frames.push(f));
  await store.put('img.digits', { id: 1, label: data.labels[1], emb: data.base[1] });
  await store.put('img.digits', { id: 2, label: data.labels[2], emb: data.base[2] });
  const vkey = keyOf('V', ['img.digits', 'e', '1']);
  const f1 = frames.find((f) => f.changes.some((c) => c.op === 'put' && c.pk[0] === 1))!;
  expect(f1.writes.some((w) => w.key.equals(vkey) && w.value !== null)).toBe(true);

  expect(vectors.topk('img.digits', { vector: data.base[1], k: 2 })[0]).toMatchObject({ id: '1', metadata: { id: 1, label: data.labels[1] } });
  expect(vectors.topk('img.digits', { vector: data.base[1], k: 5, filter: { label: data.labels[2] } }).map((m) => m.id)).toEqual(
    data.labels[1] === data.labels[2] ? ['1', '2'] : ['2'],
  );
  expect(await errCode(store.put('img.digits', { id: 3, label: 0, emb: [1, 2] }))).toMatch(/dim_mismatch|type_mismatch/);
  expect(await errCode(store.commit({ changes: [VectorParticipant.put('img.digits', { id: 'z', embedding: data.base[0] })] }))).toBe('validation_failed');

  await store.delete('img.digits', [1]);
  const f2 = frames[frames.length - 1];
  expect(f2.writes.some((w) => w.key.equals(vkey) && w.value === null)).toBe(true);
  expect(vectors.topk('img.digits', { vector: data.base[1], k: 5 }).map((m) => m.id)).toEqual(['2']);
  sub.unsubscribe();
  await store.close();
});

test('restart: loads the checkpoint and replays later frames; without one, rebuilds from the keys', async () => {
  let { store, vectors } = await open();
  await putAll(store, 'digits', 0, 2200, 'l2');
  await store.checkpoint();
  // after the checkpoint: 300 more, one replace, one delete
  await putAll(store, 'digits', 2200, 2500);
  await store.commit({ changes: [VectorParticipant.put('digits', { id: '0', embedding: data.queries[1], metadata: { digit: 42 } })] });
  await store.commit({ changes: [VectorParticipant.delete('digits', '1')] });
  const before = data.queries.map((q) => vectors.topk('digits', { vector: q, k: 10 }));
  const lsn = store.lastLsn;
  // stop without a final checkpoint: reopen a copy of the state as a crash would leave it
  const frozen = (store as unknown as { db: { close(): Promise<void> } }).db;
  await frozen.close();

  ({ store, vectors } = await open());
  expect(vectors.stats.openedFrom).toBe('checkpoint');
  expect(vectors.stats.checkpointLsn).toBeLessThan(lsn);
  expect(store.recovery.replayed.vector).toBe(lsn - vectors.stats.checkpointLsn);
  expect(vectors.table('digits').kind).toBe('hnsw');
  expect(vectors.table('digits').size).toBe(2499);
  expect(data.queries.map((q) => vectors.topk('digits', { vector: q, k: 10 }))).toEqual(before);
  expect(vectors.topk('digits', { vector: data.queries[1], k: 1 })[0]).toMatchObject({ id: '0', metadata: { digit: 42 } });
  await store.close(); // checkpoints at close

  ({ store, vectors } = await open());
  expect(vectors.stats.checkpointLsn).toBe(lsn);
  expect(data.queries.map((q) => vectors.topk('digits', { vector: q, k: 10 }))).toEqual(before);
  await store.close();
});

test('no checkpoint at all: the V keys rebuild the tables', async () => {
  let { store, vectors } = await open();
  await putAll(store, 'few', 0, 300, 'manhattan');
  const before = vectors.topk('few', { vector: data.queries[0], k: 10 });
  await (store as unknown as { db: { close(): Promise<void> } }).db.close();
  ({ store, vectors } = await open());
  expect(vectors.stats.openedFrom).toBe('keys');
  expect(vectors.topk('few', { vector: data.queries[0], k: 10 })).toEqual(before);
  await store.close();
});

test('background checkpoints image only after a tenth of the vectors changed (at least 1,000), and a crash after a skipped one replays from the last image', async () => {
  let { store, vectors } = await open();
  await putAll(store, 'digits', 0, 300, 'l2'); // 300 changes, no image yet
  let m = await store.maintain();
  expect(vectors.stats).toMatchObject({ checkpoints: 0, checkpointsSkipped: 1 });
  expect(m.checkpoint.vector).toBe(store.lastLsn); // the V keys rebuild the tables: no frame is needed
  await putAll(store, 'digits', 300, 2400); // 2,400 changes ≥ max(1,000, 240)
  m = await store.maintain();
  expect(vectors.stats).toMatchObject({ checkpoints: 1, checkpointsSkipped: 1 });
  const imaged = store.lastLsn;
  expect(m.checkpoint.vector).toBe(imaged);
  await putAll(store, 'digits', 2400, 2500); // 100 changes < 1,000: skipped, the log keeps them
  m = await store.maintain();
  expect(vectors.stats).toMatchObject({ checkpoints: 1, checkpointsSkipped: 2 });
  expect(m.checkpoint.vector).toBe(imaged);
  ({ store, vectors } = await crashAndReopen(store, vectors, imaged, 2500));
  await store.close(); // final: always images
  expect(vectors.stats.checkpoints).toBe(1);
});

test('a changed [vector] declaration of the same dim and metric (index kind, params) rebuilds the index at once', async () => {
  const { store, vectors } = await open();
  const toml = (index: string, params: string) =>
    `namespace = "app"\ntable = "v"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "str"\nrequired = true\n[[columns]]\nname = "emb"\nty = "vector"\ndim = 784\n[vector]\ncolumn = "emb"\ndim = 784\nmetric = "l2"\nindex = "${index}"\n${params}`;
  await store.registerSchema(toml('exact', ''));
  const rows = [];
  for (let j = 0; j < 300; j++) rows.push({ op: 'put' as const, schema: 'app.v', row: { id: String(j), emb: Array.from(data.base[j]) } });
  await store.commit({ changes: rows });
  expect(vectors.table('app.v').kind).toBe('exact');
  await store.registerSchema(toml('hnsw', '[vector.params]\nm = 8\nef_construction = 64\n'));
  const t = vectors.table('app.v');
  expect([t.kind, t.spec.params, t.size]).toEqual(['hnsw', { m: 8, ef_construction: 64 }, 300]);
  const hit = vectors.topk('app.v', { vector: Array.from(data.base[7]), k: 1 });
  expect(hit[0].id).toBe('7');
  await store.close();
});

test('a checkpoint is produced while commits go on: the image holds the state at its LSN, and a crash after it replays the rest', async () => {
  let { store, vectors } = await open();
  await putAll(store, 'digits', 0, 2200, 'l2');
  let done = false;
  const ckpt = store.checkpoint({ final: true }).then((m) => {
    done = true;
    return m;
  });
  // commits land while the image is produced and written (each put, replace and delete a frame)
  let j = 2200;
  let turns = 0;
  while (!done && j < 2500) {
    await store.commit({ changes: [VectorParticipant.put('digits', { id: String(j), embedding: data.base[j], metadata: { digit: data.labels[j] } })] });
    expect(vectors.topk('digits', { vector: data.base[j], k: 1 })[0].id).toBe(String(j));
    j++;
    turns++;
  }
  const imaged = (await ckpt).vector;
  expect(turns).toBeGreaterThan(0);
  expect(imaged).toBeLessThan(store.lastLsn);
  await putAll(store, 'digits', j, 2500);
  await store.commit({ changes: [VectorParticipant.delete('digits', '5')] });
  ({ store, vectors } = await crashAndReopen(store, vectors, imaged, 2499));
  await store.close();
});

test('a checkpoint whose write fails leaves the previous one in force, and the next one images the table again', async () => {
  let { store, vectors } = await open();
  await putAll(store, 'digits', 0, 2200, 'l2');
  const first = (await store.checkpoint()).vector;
  await putAll(store, 'digits', 2200, 2500);
  const st = store as unknown as { writeCheckpoint(w: unknown): Promise<void> };
  st.writeCheckpoint = async () => {
    throw new Error('disk full');
  };
  await expect(store.checkpoint({ final: true })).rejects.toThrow('disk full');
  expect(vectors.stats.checkpoints).toBe(1);
  ({ store, vectors } = await crashAndReopen(store, vectors, first, 2500));
  await store.close();
  // the same failure in a live process: the next checkpoint writes the table's image again
  ({ store, vectors } = await open());
  await putAll(store, 'digits', 0, 10);
  const st2 = store as unknown as { writeCheckpoint(w: Array<{ key: Buffer }>): Promise<void> };
  const real = st2.writeCheckpoint.bind(store);
  let fail = true;
  let keys = 0;
  st2.writeCheckpoint = async (w) => {
    if (fail) throw new Error('disk full');
    keys = w.length;
    return real(w);
  };
  await expect(store.checkpoint({ final: true })).rejects.toThrow('disk full');
  fail = false;
  const second = (await store.checkpoint({ final: true })).vector;
  expect(keys).toBeGreaterThan(1); // chunks + the record, not the record alone
  expect(second).toBe(store.lastLsn);
  ({ store, vectors } = await crashAndReopen(store, vectors, second, 2500));
  await store.close();
});
