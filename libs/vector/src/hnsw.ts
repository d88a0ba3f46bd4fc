/**
 * HNSW through hnswlib-node (C++): cosine, dot (its `ip` space) and l2. Its distances
 * are already our raw scores: cosine 1 − cos, ip 1 − a·b, l2 squared Euclidean.
 */
import { HierarchicalNSW, type SpaceName } from 'hnswlib-node';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DbError } from '@mmdb/core';
import type { AnnIndex, Hit, IndexContext, SearchMode, SearchParams } from './ann';
import { calibrateEf, efCalibration, type Calibration } from './calibrate';
import { exactOver } from './exact';

/** Pending changes drained per event-loop turn after an image is written (each addPoint ~0.5 ms at 100k). */
const DRAIN_MS = 5;

/**
 * While hnswlib writes an image on its own thread the graph must not change: adds and
 * removes wait in `pending` (in order) and searches answer the labels they touch exactly.
 */
interface Frozen {
  readonly pending: Array<[add: boolean, label: number]>;
  readonly touched: Set<number>;
}

export const HNSW_DEFAULTS = { m: 16, ef_construction: 200, ef_fast: 40, ef_high_recall: 128, seed: 100 };

const SPACE: Record<string, SpaceName> = { cosine: 'cosine', dot: 'ip', l2: 'l2' };

export class HnswIndex implements AnnIndex {
  readonly kind = 'hnsw' as const;
  private readonly h: HierarchicalNSW;
  private readonly efFast: number;
  private readonly efHigh: number;
  private readonly deleted = new Set<number>();
  /**
   * hnswlib-node takes only plain arrays: one reused array of doubles (`Array.from` on a
   * Float32Array builds a new one element by element, ~10 KB of garbage per 128-d query).
   */
  private readonly arg: number[];

  /**
   * `saved`: the image to read (synchronously); `'loading'`: left empty for `load`, which reads
   * it on hnswlib's own thread.
   */
  constructor(private readonly ctx: IndexContext, saved?: Buffer | 'loading') {
    const space = SPACE[ctx.metric];
    if (!space) throw new DbError('validation_failed', `index "hnsw" does not serve metric "${ctx.metric}"`, { field: 'index' });
    const p = { ...HNSW_DEFAULTS, ...ctx.params };
    this.arg = Array.from({ length: ctx.dim }, () => 0.5);
    this.efFast = p.ef_fast;
    this.efHigh = p.ef_high_recall;
    this.h = new HierarchicalNSW(space, ctx.dim);
    if (saved === 'loading') return;
    if (saved) {
      withTempFile((f) => {
        writeFileSync(f, saved);
        this.h.readIndexSync(f);
      });
      this.learnDeleted();
    } else this.h.initIndex({ maxElements: Math.max(1024, ctx.slab.capacity), m: p.m, efConstruction: p.ef_construction, randomSeed: p.seed });
  }

  /**
   * The index of an image given as the pieces of a chunked checkpoint, read without blocking
   * the event loop: the pieces are written to a temporary file as they are (no concatenation)
   * and hnswlib reads it on a libuv thread (`readIndex`), while the other participants load.
   */
  static async load(ctx: IndexContext, pieces: readonly Buffer[]): Promise<HnswIndex> {
    const x = new HnswIndex(ctx, 'loading');
    const dir = await mkdtemp(join(tmpdir(), 'mmdb-hnsw-'));
    try {
      const file = join(dir, 'index.bin');
      const fh = await open(file, 'w');
      try {
        await fh.writev(pieces as Buffer[]);
      } finally {
        await fh.close();
      }
      await x.h.readIndex(file);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    x.learnDeleted();
    return x;
  }

  /** hnswlib keeps deleted marks in its file; we re-learn them from the slab. */
  private learnDeleted(): void {
    const slab = this.ctx.slab;
    for (let l = 0; l < slab.high; l++) if (!slab.live[l] && this.has(l)) this.deleted.add(l);
  }

  private has(label: number): boolean {
    try {
      this.h.getPoint(label);
      return true;
    } catch {
      return false;
    }
  }

  /** Set while an image is being written and until the changes held meanwhile are applied. */
  private frozen: Frozen | null = null;

  /** The last calibration of the high_recall ef (calibrate.ts), the one running, and whether the index was replaced. */
  private calibration: Calibration | null = null;
  private runningCalibration: Promise<void> | null = null;
  private disposed = false;

  /**
   * The ef of a search: `fast` keeps ef_fast; `high_recall` takes the larger of ef_high_recall
   * and the calibrated ef E. A filtered walk (hnswlib keeps ef *passing* candidates, and walks
   * through the others) explores about as far as an unfiltered one with ef / s (s the share
   * passing); to hold the k nearest passing it must reach about the k / s nearest of all, which
   * an unfiltered walk does with E − k + k / s. So it takes s·E + k·(1 − s), and never less
   * than the mode's ef (DESIGN.md "Filtered search and ef").
   */
  efFor(k: number, mode: SearchMode, passing = 1): number {
    if (mode === 'fast') return Math.max(k, this.efFast);
    const need = Math.max(this.efHigh, this.calibration?.ef ?? 0);
    const s = Math.min(1, passing);
    return Math.max(k, this.efHigh, Math.ceil(s * need + k * (1 - s)));
  }

  /** Whether a calibration is running now (explain says so: its slices share the event loop). */
  get calibrating(): boolean {
    return this.runningCalibration !== null;
  }

  /** The last calibration (explain, stats, tests). */
  get calibrated(): Calibration | null {
    return this.calibration;
  }

  /**
   * Starts a background calibration when the index has `efCalibration.min` vectors and has
   * grown by `efCalibration.growth` since the last one; answers the running one (or null).
   */
  tune(size: number): Promise<void> | null {
    if (this.runningCalibration || this.disposed) return this.runningCalibration;
    if (this.ctx.params.calibrate === 0) return null; // `[vector.params] calibrate = 0`: the configured ef only
    const c = efCalibration;
    if (size < c.min || (this.calibration && size < this.calibration.size * c.growth)) return null;
    const graph = (q: Float32Array, k: number, ef: number, only: ((label: number) => boolean) | undefined): number[] => {
      this.h.setEf(ef);
      const n = Math.min(k, this.h.getCurrentCount());
      return (only ? this.h.searchKnn(this.fill(q), n, only) : this.h.searchKnn(this.fill(q), n)).neighbors;
    };
    this.runningCalibration = calibrateEf(this.ctx, this.efHigh, graph, () => this.disposed)
      .then((r) => {
        if (r) this.calibration = r;
      })
      .catch(() => undefined) // a failed calibration leaves the last one in force
      .finally(() => {
        this.runningCalibration = null;
      });
    return this.runningCalibration;
  }

  /** Takes the calibration an image of this same graph was written with (a restart does not measure again). */
  restore(c: Calibration): void {
    if (Number.isInteger(c.ef) && c.ef > 0 && Number.isInteger(c.size)) this.calibration = c;
  }

  /** The table replaced this index: a running calibration stops. */
  dispose(): void {
    this.disposed = true;
  }

  add(label: number): void {
    if (this.frozen) return this.hold(true, label);
    if (label >= this.h.getMaxElements()) this.h.resizeIndex(Math.max(label + 1, this.h.getMaxElements() * 2));
    this.h.addPoint(this.fill(this.ctx.slab.get(label)), label);
    this.deleted.delete(label);
  }

  remove(label: number): void {
    if (this.frozen) return this.hold(false, label);
    if (this.deleted.has(label)) return;
    try {
      this.h.markDelete(label);
      this.deleted.add(label);
    } catch {
      /* never added */
    }
  }

  search(q: Float32Array, p: SearchParams): Hit[] {
    const fz = this.frozen;
    if (!fz || fz.touched.size === 0) return this.searchGraph(q, p);
    // the graph is as of the image: labels changed since are left out of it and scored exactly
    const { touched } = fz;
    const f = p.filter;
    const hits = this.searchGraph(q, { ...p, filter: f ? (l) => !touched.has(l) && f(l) : (l) => !touched.has(l) });
    const extra = exactOver(this.ctx, q, f ? [...touched].filter(f) : touched, p.k);
    return hits
      .concat(extra)
      .sort((a, b) => a.score - b.score || a.label - b.label)
      .slice(0, p.k);
  }

  /**
   * The index's bytes as of this call (what `serialize()` would answer now), written by
   * hnswlib on a libuv thread instead of the event loop (~0.2 s at 100k × 128). Until the
   * write ends, changes are held (see `Frozen`); they are then applied a few ms per turn.
   */
  image(): Promise<Buffer> {
    if (this.frozen) throw new Error('an HNSW image is already being written');
    const fz: Frozen = { pending: [], touched: new Set() };
    this.frozen = fz;
    const dir = mkdtempSync(join(tmpdir(), 'mmdb-hnsw-'));
    const file = join(dir, 'index.bin');
    const written = (async () => {
      await this.h.writeIndex(file);
      return readFile(file);
    })();
    const done = written.finally(async () => {
      await rm(dir, { recursive: true, force: true });
      await this.drain(fz);
    });
    return done.then(() => written);
  }

  /** Whether changes are being held for an image (tests). */
  get holding(): boolean {
    return this.frozen !== null;
  }

  private hold(add: boolean, label: number): void {
    this.frozen!.pending.push([add, label]);
    this.frozen!.touched.add(label);
  }

  /** Applies the changes held for an image, DRAIN_MS per event-loop turn, then unfreezes. */
  private async drain(fz: Frozen): Promise<void> {
    let i = 0;
    for (;;) {
      const t0 = performance.now();
      while (i < fz.pending.length && performance.now() - t0 < DRAIN_MS) {
        const [add, label] = fz.pending[i++];
        this.frozen = null;
        if (add) this.add(label);
        else this.remove(label);
        this.frozen = fz;
      }
      if (i >= fz.pending.length) break;
      await new Promise((r) => setImmediate(r));
    }
    this.frozen = null;
  }

  private searchGraph(q: Float32Array, p: SearchParams): Hit[] {
    this.h.setEf(this.efFor(p.k, p.mode, p.filter ? p.passing : 1));
    const arg = this.fill(q);
    const r = p.filter ? this.h.searchKnn(arg, p.k, p.filter) : this.h.searchKnn(arg, p.k);
    const out: Hit[] = [];
    for (let i = 0; i < r.neighbors.length; i++) out.push({ label: r.neighbors[i], score: r.distances[i] });
    return out.sort((a, b) => a.score - b.score || a.label - b.label);
  }

  private fill(v: Float32Array): number[] {
    const a = this.arg;
    for (let i = 0; i < a.length; i++) a[i] = v[i];
    return a;
  }

  serialize(): Buffer {
    // the graph lacks the held changes until they are applied: an image now would be stale
    if (this.frozen) throw new Error('an HNSW image is being written; serialize() after it');
    return withTempFile((f) => {
      this.h.writeIndexSync(f);
      return readFileSync(f);
    });
  }

  memoryBytes(): number {
    // hnswlib stores each vector plus its level-0 links (2·m ids) and a header
    const p = { ...HNSW_DEFAULTS, ...this.ctx.params };
    return this.h.getCurrentCount() * (this.ctx.dim * 4 + (2 * p.m + 1) * 4 + 8);
  }
}

function withTempFile<T>(fn: (file: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'mmdb-hnsw-'));
  try {
    return fn(join(dir, 'index.bin'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
