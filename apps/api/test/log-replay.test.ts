/**
 * The frame applier across every participant: a store rebuilt from its own log, from an
 * empty directory, equals the original (verify clean, a checksum over every keyspace equal).
 * Uses the real fts, vector and graph participants, so it lives here rather than in
 * libs/storage (which may not import them).
 */
import { createHash } from 'crypto';
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { FtsParticipant } from '@mmdb/fts';
import { GraphIndex } from '@mmdb/graph';
import { KEYSPACE, TenantStore } from '@mmdb/storage';
import { VectorParticipant } from '@mmdb/vector';

const VENDORS = `namespace = "shop"
table = "vendors"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "str"
[[columns]]
name = "name"
ty = "str"
[[indexes]]
name = "by_name"
columns = ["name"]
unique = true
`;

const PRODUCTS = `namespace = "shop"
table = "products"
primary_key = ["sku"]
[[columns]]
name = "sku"
ty = "str"
[[columns]]
name = "price"
ty = "f64"
[[columns]]
name = "vendor_id"
ty = "str"
[[columns]]
name = "related"
ty = "json"
[[columns]]
name = "body"
ty = "str"
[[columns]]
name = "embedding"
ty = "vector"
dim = 3
[[indexes]]
name = "by_price"
columns = ["price"]
[[foreign_keys]]
name = "vendor"
columns = ["vendor_id"]
references = "shop.vendors"
[vector]
column = "embedding"
dim = 3
metric = "cosine"
[[fulltext]]
field = "body"
analyzer = "english"
[[relations]]
name = "related_to"
target = "shop.products"
columns = ["related"]
`;

const SCRATCH = `namespace = "shop"
table = "scratch"
primary_key = ["k"]
[[columns]]
name = "k"
ty = "i64"
[[columns]]
name = "body"
ty = "str"
[[fulltext]]
field = "body"
analyzer = "english"
`;

const participants = () => [new FtsParticipant(), new VectorParticipant(), new GraphIndex()];

/** sha256 over every key and value of one keyspace, and the number of keys. */
async function keyspaceSums(store: TenantStore): Promise<Record<string, { keys: number; sha256: string }>> {
  const out: Record<string, { keys: number; sha256: string }> = {};
  const snap = store.snapshot();
  try {
    for (const [name, prefix] of Object.entries(KEYSPACE)) {
      const h = createHash('sha256');
      let keys = 0;
      const gte = Buffer.from(prefix);
      const lt = Buffer.from([gte[0] + 1]);
      for await (const batch of snap.rawRange({ gte, lt })) {
        for (const [k, v] of batch) {
          keys++;
          h.update(k).update(Buffer.from([0])).update(v).update(Buffer.from([1]));
        }
      }
      out[name] = { keys, sha256: h.digest('hex') };
    }
  } finally {
    await snap.release();
  }
  return out;
}

describe('a store rebuilt from its own log equals the original', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'replay-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('over rows, indexes, foreign keys, fts, vectors, graph edges, custom changes, idempotency and a schema drop', async () => {
    const a = await TenantStore.open({ dir: join(dir, 'a'), participants: participants(), checkpointFrames: 0, checkpointMs: 0 });
    await a.registerSchema(VENDORS);
    await a.registerSchema(PRODUCTS);
    await a.registerSchema(SCRATCH);
    for (let v = 0; v < 5; v++) await a.put('shop.vendors', { id: `v${v}`, name: `Vendor ${v}` });
    const words = ['red', 'green', 'blue', 'steel', 'wooden', 'chair', 'table', 'lamp'];
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 120; i++) {
      writes.push(
        a.put('shop.products', {
          sku: `p${i}`,
          price: (i * 7) % 50,
          vendor_id: `v${i % 5}`,
          related: i > 0 ? [`p${i - 1}`, `p${(i * 3) % (i + 1)}`] : [],
          body: `${words[i % 8]} ${words[(i * 3) % 8]} ${words[(i * 5) % 8]} number ${i}`,
          embedding: [Math.sin(i), Math.cos(i), (i % 7) / 7 + 0.1],
        }),
      );
    }
    await Promise.all(writes); // concurrent: several requests per group commit
    for (let i = 0; i < 120; i += 3) await a.put('shop.products', { sku: `p${i}`, price: 99, vendor_id: 'v1', related: ['p1'], body: `updated ${words[i % 8]}`, embedding: [1, 0, i / 120] });
    for (let i = 1; i < 120; i += 10) await a.delete('shop.products', [`p${i}`]);
    await a.commit({
      changes: [
        { op: 'custom', participant: 'vector', type: 'put', payload: { table: 'loose', id: 'x1', embedding: [0.1, 0.2, 0.3], metric: 'l2' } },
        { op: 'custom', participant: 'fts', type: 'put_doc', payload: { table: 'notes', field: 'text', doc_id: 'n1', text: 'a wooden lamp on the table' } },
      ],
    });
    await a.commit({
      changes: [{ op: 'put', schema: 'shop.vendors', row: { id: 'v9', name: 'Late' } }],
      idempotency: { key: 'idem-1', fingerprint: 'f', expiresAt: Date.now() + 3_600_000, render: (r) => ({ status: 201, body: r as never }) },
    });
    for (let k = 0; k < 10; k++) await a.put('shop.scratch', { k, body: `scratch ${k}` });
    await a.dropSchema('shop.scratch');
    await a.registerSchema(SCRATCH);
    await a.put('shop.scratch', { k: 1, body: 'after the drop' });

    const b = await TenantStore.open({ dir: join(dir, 'b'), participants: participants(), checkpointFrames: 0, checkpointMs: 0 });
    let batch: Buffer[] = [];
    for await (const e of a.logFrames(1)) {
      batch.push(e.bytes);
      if (batch.length === 37) {
        await b.applyFrames(batch);
        batch = [];
      }
    }
    await b.applyFrames(batch);

    expect(b.lastLsn).toBe(a.lastLsn);
    expect(b.manifests().map((m) => m.id)).toEqual(a.manifests().map((m) => m.id));
    const [va, vb] = [await a.verify(), await b.verify()];
    expect(va.differences).toEqual([]);
    expect(vb).toEqual(va);
    expect(vb.rows).toBeGreaterThan(100);
    expect(vb.derivedKeys).toBeGreaterThan(500);
    const [sa, sb] = [await keyspaceSums(a), await keyspaceSums(b)];
    expect(sb).toEqual(sa);
    for (const space of ['row', 'index', 'fts', 'vector', 'edge', 'idempotency', 'log', 'meta'] as const) expect(sa[space].keys).toBeGreaterThan(0);
    // in-memory state agrees too: a reopened copy replays its log into the same rows
    expect((await b.getRow('shop.products', ['p3']))?.values.price).toBe(99);
    expect(await b.getRow('shop.products', ['p1'])).toBeUndefined();
    expect((await b.getRow('shop.scratch', [1]))?.values.body).toBe('after the drop');
    expect(await b.getRow('shop.scratch', [2])).toBeUndefined();
    await a.close();
    await b.close();
  });

  it('refuses frames that do not continue the log (writing nothing), skips a re-delivery, refuses another history', async () => {
    const a = await TenantStore.open({ dir: join(dir, 'a') });
    await a.registerSchema(VENDORS);
    await a.put('shop.vendors', { id: 'v1', name: 'One' });
    const frames: Buffer[] = [];
    for await (const e of a.logFrames(1)) frames.push(e.bytes);
    const b = await TenantStore.open({ dir: join(dir, 'b') });
    await expect(b.applyFrames([frames[1]])).rejects.toMatchObject({ code: 'validation_failed' });
    const torn = frames[0].subarray(0, frames[0].length - 3);
    await expect(b.applyFrames([torn])).rejects.toMatchObject({ code: 'corrupt_log' });
    expect(b.lastLsn).toBe(0);
    await b.applyFrames(frames);
    expect((await b.getRow('shop.vendors', ['v1']))?.values.name).toBe('One');
    await b.applyFrames(frames.slice(1)); // a re-delivery: skipped
    expect(b.lastLsn).toBe(2);
    // commits after the applied frames continue the log
    await b.setEpoch(5);
    await b.put('shop.vendors', { id: 'v2', name: 'Two' });
    expect(b.lastLsn).toBe(3);
    // a's own frame 3 (epoch 0) is another history than b's (epoch 5): refused, not skipped
    await a.put('shop.vendors', { id: 'v3', name: 'Three' });
    const third: Buffer[] = [];
    for await (const e of a.logFrames(3)) third.push(e.bytes);
    await expect(b.applyFrames(third)).rejects.toMatchObject({ code: 'resync_required' });
    await a.close();
    await b.close();
  });
});
