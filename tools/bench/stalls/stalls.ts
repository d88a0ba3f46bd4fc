/**
 * The longest event-loop stall and the read p99 while one heavy event runs, in-process with
 * the real parts: a vector table's checkpoint (TenantStore + VectorParticipant on classic-level),
 * the graph overlay merge (Adjacency at N edges), a large table scan (TenantStore.scan of
 * N rows). A steady read load (one read due every millisecond) runs meanwhile; a read's
 * latency counts from when it was due, so a stall shows in it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Adjacency } from '@mmdb/graph';
import { SqlEngine } from '@mmdb/sql';
import { TenantStore } from '@mmdb/storage';
import { VectorParticipant, VectorTable, rng } from '@mmdb/vector';

/** `before`: the code path as it was before issue 25, emulated in the same run; `after`: as it is. */
const MODES = process.argv.includes('--after-only') ? ['after'] : ['before', 'after'];
const STEP_WORK = Adjacency.mergeStepWork;

/**
 * The checkpoint as it was made before issue 25: the image by `serialize()` in one go on the
 * event loop (hnswlib's writeIndexSync, one Buffer.concat) cut into chunks, the batch built
 * in one go. Returns the undo.
 */
function syncImages(store: TenantStore): () => void {
  // and the batch built in one go, as `writeCheckpoint` did
  const st = store as unknown as { db: { batch(): { put(k: Buffer, v: Buffer): void; del(k: Buffer): void; write(o: object): Promise<void> } }; writeCheckpoint: unknown };
  st.writeCheckpoint = async (writes: Array<{ key: Buffer; value: Buffer | null }>) => {
    const batch = st.db.batch();
    for (const w of writes) {
      if (w.value === null) batch.del(w.key);
      else batch.put(w.key, w.value);
    }
    await batch.write({ sync: true });
  };
  const proto = VectorTable.prototype as unknown as { imageChunks: (chunk: number) => Promise<Buffer[]> };
  const was = proto.imageChunks;
  proto.imageChunks = function (this: VectorTable, chunk: number) {
    const img = this.serialize();
    const out: Buffer[] = [];
    for (let i = 0; i < Math.max(1, Math.ceil(img.length / chunk)); i++) out.push(img.subarray(i * chunk, (i + 1) * chunk));
    return Promise.resolve(out);
  };
  return () => {
    proto.imageChunks = was;
    delete (st as { writeCheckpoint?: unknown }).writeCheckpoint; // the prototype's again
  };
}

const now = () => Number(process.hrtime.bigint()) / 1e6;
const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};

interface Row {
  event: string;
  size: string;
  eventMs: number;
  maxStallMs: number;
  reads: number;
  p99: number;
  maxRead: number;
}

/** Runs `event` while `read` is called once per millisecond; the loop delay and read latencies during it. */
async function during(event: string, size: string, read: () => unknown | Promise<unknown>, run: () => Promise<unknown>): Promise<Row> {
  const h = monitorEventLoopDelay({ resolution: 1 });
  const lat: number[] = [];
  let stop = false;
  let recording = false;
  const loop = (async () => {
    let due = now();
    while (!stop) {
      await read();
      if (recording) lat.push(now() - due);
      due += 1;
      const wait = due - now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      else {
        due = now(); // behind: the next read is due now (no burst to catch up)
        await new Promise((r) => setImmediate(r));
      }
    }
  })();
  h.enable();
  // the histogram records from its second tick on: let it tick before the event starts
  await new Promise((r) => setTimeout(r, 50));
  recording = true;
  const t0 = now();
  await run();
  const eventMs = now() - t0;
  h.disable();
  recording = false;
  stop = true;
  await loop;
  lat.sort((a, b) => a - b);
  return { event, size, eventMs, maxStallMs: h.max / 1e6, reads: lat.length, p99: lat[Math.floor(lat.length * 0.99)] ?? NaN, maxRead: lat[lat.length - 1] ?? NaN };
}

async function vectorCheckpoint(n: number): Promise<Row[]> {
  const D = 128;
  const r = rng(7);
  const vec = () => Array.from({ length: D }, () => r() * 2 - 1);
  const dir = mkdtempSync(join(tmpdir(), 'mmdb-stalls-v-'));
  try {
    const vectors = new VectorParticipant();
    const store = await TenantStore.open({ dir, participants: [vectors], sync: false });
    for (let i = 0; i < n; i += 500) {
      const changes = [];
      for (let j = i; j < Math.min(n, i + 500); j++) changes.push(VectorParticipant.put('big', { id: String(j), embedding: vec(), metric: 'l2' }));
      await store.commit({ changes });
    }
    const q = vec();
    const size = `${n.toLocaleString()} × ${D} (${vectors.table('big').kind})`;
    const rows: Row[] = [];
    for (const mode of MODES) {
      // a put marks the table dirty: each final checkpoint images it again
      await store.commit({ changes: [VectorParticipant.put('big', { id: `m${mode}`, embedding: vec() })] });
      const restore = mode === 'before' ? syncImages(store) : () => undefined;
      rows.push(await during(`vector checkpoint (${mode})`, size, () => vectors.topk('big', { vector: q, k: 10 }), () => store.checkpoint({ final: true })));
      restore();
    }
    await store.close();
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function graphMerge(m: number): Promise<Row[]> {
  const r = rng(11);
  const nodes = Math.max(16, Math.floor(m / 8));
  const a = new Adjacency();
  for (let i = 0; i < m; i++) a.append({ src: `n${Math.floor(r() * nodes)}`, dst: `n${Math.floor(r() * nodes)}`, owner: `e${i}` });
  a.compact();
  let i = m;
  const rows: Row[] = [];
  const put = () => a.put({ src: `n${Math.floor(r() * nodes)}`, dst: `n${Math.floor(r() * nodes)}`, owner: `e${i++}` });
  for (const mode of MODES) {
    // the overlay filled up to just under its threshold (base / 8) outside the measurement
    const before = a.compactions;
    while (a.pendingChanges < a.baseEdges / 8 - 256) put();
    // `before`: the whole merge at once, as before issue 25
    Adjacency.mergeStepWork = mode === 'before' ? Infinity : STEP_WORK;
    rows.push(
      await during(`graph overlay merge (${mode})`, `${a.edgeCount.toLocaleString()} edges`, () => a.neighbors(`n${Math.floor(r() * nodes)}`), async () => {
        // puts (256 per turn) until the merge has run and finished
        while (a.compactions === before) {
          for (let k = 0; k < 256 && a.compactions === before; k++) put();
          await new Promise((res) => setImmediate(res));
        }
      }),
    );
    Adjacency.mergeStepWork = STEP_WORK;
  }
  return rows;
}

const ROWS_TOML = `
namespace = "main"
table = "big"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "name"
ty = "str"
[[columns]]
name = "v"
ty = "i64"
`;

async function tableScan(n: number): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'mmdb-stalls-s-'));
  try {
    const store = await TenantStore.open({ dir, participants: [], sync: false });
    const { id } = await store.registerSchema(ROWS_TOML);
    for (let i = 0; i < n; i += 2000) {
      const changes = [];
      for (let j = i; j < Math.min(n, i + 2000); j++) changes.push({ op: 'put' as const, schema: id, row: { id: j, name: `row ${j}`, v: j * 7 } });
      await store.commit({ changes });
    }
    const probe = [Math.floor(n / 2)];
    const rows: Row[] = [];
    rows.push(await during('large table scan (storage)', `${n.toLocaleString()} rows`, () => store.getRow(id, probe), async () => {
      const snap = store.snapshot();
      let c = 0;
      try {
        for await (const batch of snap.scanRows(id)) c += batch.length;
      } finally {
        await snap.release();
      }
      if (c !== n) throw new Error(`scan saw ${c} of ${n}`);
    }));
    // the same table through SQL: a full scan with a filter and an aggregate, point reads meanwhile
    const sql = new SqlEngine(store);
    await sql.run('SELECT count(*) FROM big');
    await sql.tables.settled();
    const q = 'SELECT count(*), sum(v) FROM big WHERE v % 7 = 3';
    rows.push(await during('large table scan (SQL)', `${n.toLocaleString()} rows: ${q}`, () => sql.run(`SELECT * FROM big WHERE id = ${probe[0]}`), () => sql.run(q)));
    await store.close();
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function main(): Promise<void> {
  const rows: Row[] = [];
  const only = process.argv.find((a) => a.startsWith('--only='))?.slice(7);
  if (!only || only === 'vector') rows.push(...(await vectorCheckpoint(arg('--vectors', 100_000))));
  if (!only || only === 'graph') rows.push(...(await graphMerge(arg('--edges', 1_000_000))));
  if (!only || only === 'scan') rows.push(...(await tableScan(arg('--rows', 1_000_000))));
  console.log('\n### Event-loop stalls under a steady read load (1 read due per ms)\n');
  console.log('| event | size | event ms | longest stall ms | reads during | read p99 ms | read max ms |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.event} | ${r.size} | ${r.eventMs.toFixed(0)} | ${r.maxStallMs.toFixed(1)} | ${r.reads} | ${r.reads ? r.p99.toFixed(2) : 'n/a'} | ${r.reads ? r.maxRead.toFixed(1) : 'n/a'} |`);
}
