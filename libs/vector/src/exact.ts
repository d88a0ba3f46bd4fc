import type { AnnIndex, Hit, IndexContext, SearchParams } from './ann';
import { TopK } from './heap';
import { scorer } from './metric';

/** Brute force over every live slot: exact answers, for small tables and selective filters. */
export class ExactIndex implements AnnIndex {
  readonly kind = 'exact' as const;
  constructor(private readonly ctx: IndexContext) {}

  add(): void {}
  remove(): void {}

  search(q: Float32Array, p: SearchParams): Hit[] {
    const { slab, dim } = this.ctx;
    const raw = scorer(this.ctx.metric).raw;
    const top = new TopK(p.k);
    const { live, data } = slab;
    for (let l = 0; l < slab.high; l++) {
      if (!live[l] || (p.filter && !p.filter(l))) continue;
      top.push(raw(q, data, l * dim), l);
    }
    return top.sorted();
  }

  serialize(): Buffer {
    return Buffer.alloc(0);
  }

  memoryBytes(): number {
    return 0;
  }
}

/** Exact top-k over a given list of labels (the members of a metadata filter). */
export function exactOver(ctx: IndexContext, q: Float32Array, labels: Iterable<number>, k: number): Hit[] {
  const raw = scorer(ctx.metric).raw;
  const top = new TopK(k);
  const { data, live } = ctx.slab;
  for (const l of labels) if (live[l]) top.push(raw(q, data, l * ctx.dim), l);
  return top.sorted();
}
