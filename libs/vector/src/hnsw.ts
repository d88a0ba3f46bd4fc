/**
 * HNSW through hnswlib-node (C++): cosine, dot (its `ip` space) and l2. Its distances
 * are already our raw scores: cosine 1 − cos, ip 1 − a·b, l2 squared Euclidean.
 */
import { HierarchicalNSW, type SpaceName } from 'hnswlib-node';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DbError } from '@mmdb/core';
import type { AnnIndex, Hit, IndexContext, SearchParams } from './ann';

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

  constructor(private readonly ctx: IndexContext, saved?: Buffer) {
    const space = SPACE[ctx.metric];
    if (!space) throw new DbError('validation_failed', `index "hnsw" does not serve metric "${ctx.metric}"`, { field: 'index' });
    const p = { ...HNSW_DEFAULTS, ...ctx.params };
    this.arg = Array.from({ length: ctx.dim }, () => 0.5);
    this.efFast = p.ef_fast;
    this.efHigh = p.ef_high_recall;
    this.h = new HierarchicalNSW(space, ctx.dim);
    if (saved) {
      withTempFile((f) => {
        writeFileSync(f, saved);
        this.h.readIndexSync(f);
      });
      // hnswlib keeps deleted marks in its file; we re-learn them from the slab
      for (let l = 0; l < ctx.slab.high; l++) if (!ctx.slab.live[l] && this.has(l)) this.deleted.add(l);
    } else this.h.initIndex({ maxElements: Math.max(1024, ctx.slab.capacity), m: p.m, efConstruction: p.ef_construction, randomSeed: p.seed });
  }

  private has(label: number): boolean {
    try {
      this.h.getPoint(label);
      return true;
    } catch {
      return false;
    }
  }

  add(label: number): void {
    if (label >= this.h.getMaxElements()) this.h.resizeIndex(Math.max(label + 1, this.h.getMaxElements() * 2));
    this.h.addPoint(this.fill(this.ctx.slab.get(label)), label);
    this.deleted.delete(label);
  }

  remove(label: number): void {
    if (this.deleted.has(label)) return;
    try {
      this.h.markDelete(label);
      this.deleted.add(label);
    } catch {
      /* never added */
    }
  }

  search(q: Float32Array, p: SearchParams): Hit[] {
    const ef = Math.max(p.k, p.mode === 'fast' ? this.efFast : this.efHigh);
    this.h.setEf(ef);
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
