import { rng } from './kmeans';
import { VectorSlab } from './slab';
import { VectorTable, type TableSpec } from './table';

const SPEC: TableSpec = { dim: 16, metric: 'l2', index: 'hnsw', params: {} };
const CHUNK = 64 * 1024;

describe('checkpoint image in steps (issue 25: no event-loop stall)', () => {
  it('is taken at the call, produced over many turns while writes and searches go on, and equals serialize() at that instant', async () => {
    const r = rng(5);
    const vec = () => Array.from({ length: SPEC.dim }, () => r() * 2 - 1);
    const t = new VectorTable('t', SPEC);
    const vs: number[][] = [];
    for (let i = 0; i < 6000; i++) {
      vs.push(vec());
      t.upsert(`v${i}`, vs[i], { g: i % 3 });
    }
    for (let i = 0; i < 6000; i += 97) t.delete(`v${i}`);
    expect(t.kind).toBe('hnsw');
    const expected = t.serialize();
    let done = false;
    const image = t.imageChunks(CHUNK).then((c) => {
      done = true;
      return c;
    });
    // between the image's steps: new entries, replaced ones, deleted ones, and searches that see them
    let turns = 0;
    const added: Array<[string, number[]]> = [];
    while (!done) {
      const nv = vec();
      t.upsert(`n${turns}`, nv, null);
      added.push([`n${turns}`, nv]);
      t.upsert(`v${turns + 1}`, nv.map((x) => x + 100), null);
      t.delete(`v${turns + 3001}`);
      expect(t.topk(nv, { k: 3, mode: 'fast' })[0]).toMatchObject({ id: `n${turns}`, distance: 0 });
      expect(t.topk(vs[turns + 3001], { k: 5, mode: 'high_recall' }).map((m) => m.id)).not.toContain(`v${turns + 3001}`);
      await new Promise((res) => setImmediate(res));
      turns++;
    }
    const chunks = await image;
    expect(turns).toBeGreaterThanOrEqual(10);
    expect(chunks.length).toBe(Math.ceil(expected.length / CHUNK));
    expect(chunks.slice(0, -1).every((c) => c.length === CHUNK)).toBe(true);
    expect(Buffer.concat(chunks).equals(expected)).toBe(true);
    // the image reopens as the table was at the call
    const back = VectorTable.deserialize('t', Buffer.concat(chunks));
    expect(back.size).toBe(6000 - Math.ceil(6000 / 97));
    expect(back.has('n0')).toBe(false);
    expect(back.topk(vs[3001], { k: 1, mode: 'high_recall' })[0]).toMatchObject({ id: 'v3001', distance: 0 });
    // and the live table, its held changes applied, finds everything written meanwhile
    for (const [id, v] of added) expect(t.topk(v, { k: 1, mode: 'high_recall' })[0]).toMatchObject({ id, distance: 0 });
    expect(t.has(`v${3001}`)).toBe(false);
  });

  it('gives the same bytes as serialize() for exact, IVF and IVF-PQ tables too', async () => {
    const r = rng(9);
    const specs: TableSpec[] = [
      { ...SPEC, index: 'exact' },
      { ...SPEC, index: 'hnsw', metric: 'manhattan' }, // IVF: hnswlib has no L1
      { ...SPEC, index: 'ivfpq' },
    ];
    const kinds: string[] = [];
    for (const spec of specs) {
      const t = new VectorTable('t', spec);
      for (let i = 0; i < 5000; i++) t.upsert(`v${i}`, Array.from({ length: SPEC.dim }, () => r()), i % 2 ? { big: 12345678901234567890n } : null);
      kinds.push(t.kind);
      const expected = t.serialize();
      const chunks = await t.imageChunks(CHUNK);
      expect(Buffer.concat(chunks).equals(expected)).toBe(true);
    }
    expect(kinds).toEqual(['exact', 'ivf', 'ivfpq']);
  });
});

describe('VectorTable.load (issue 25 §2: restart at scale)', () => {
  it('reads the chunks in place (no concatenation; HNSW on hnswlib’s thread) into the table deserialize() gives, for every index kind', async () => {
    const r = rng(11);
    const specs: TableSpec[] = [SPEC, { ...SPEC, index: 'exact' }, { ...SPEC, index: 'hnsw', metric: 'manhattan' }];
    for (const spec of specs) {
      const t = new VectorTable('t', spec);
      for (let i = 0; i < 3000; i++) t.upsert(`v${i}`, Array.from({ length: SPEC.dim }, () => r()), { g: i % 5 });
      for (let i = 0; i < 3000; i += 31) t.delete(`v${i}`);
      // odd chunk sizes: the header, the slab, its live flags and the index each span chunk ends
      const chunks = await t.imageChunks(7_777);
      const whole = VectorTable.deserialize('t', Buffer.concat(chunks));
      const loaded = await VectorTable.load('t', chunks);
      expect([loaded.kind, loaded.size]).toEqual([whole.kind, whole.size]);
      expect(loaded.serialize().equals(whole.serialize())).toBe(true);
      for (let q = 0; q < 20; q++) {
        const v = Array.from({ length: SPEC.dim }, () => r());
        expect(loaded.topk(v, { k: 10, mode: 'high_recall', filter: q % 2 ? { g: 3 } : null })).toEqual(whole.topk(v, { k: 10, mode: 'high_recall', filter: q % 2 ? { g: 3 } : null }));
      }
      expect(loaded.has('v31')).toBe(false);
      expect(loaded.has('v32')).toBe(true);
    }
  });
});

describe('VectorSlab.copyInSteps', () => {
  it('copies the vectors as of the call over many turns, keeping those written meanwhile as they were (copy-on-write)', async () => {
    const dim = 8;
    const slab = new VectorSlab(dim, 16); // grows while copied
    const r = rng(3);
    const v = () => Float32Array.from({ length: dim }, () => r());
    for (let l = 0; l < 1000; l++) slab.set(l, v());
    const expected = slab.data.slice(0, 1000 * dim);
    let done = false;
    const copy = slab.copyInSteps(64).then((c) => {
      done = true;
      return c;
    });
    let turns = 0;
    while (!done) {
      // overwrite labels ahead of and behind the copy, twice some, and grow the slab
      slab.set((turns * 37) % 1000, v());
      slab.set(999 - turns, v());
      slab.set((turns * 37) % 1000, v());
      slab.set(1000 + turns * 50, v());
      await new Promise((res) => setImmediate(res));
      turns++;
    }
    expect(turns).toBeGreaterThanOrEqual(100);
    expect(await copy).toEqual(expected);
  });
});
