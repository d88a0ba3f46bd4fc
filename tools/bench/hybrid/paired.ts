/**
 * Repeated, interleaved loops of one statement against its client assembly (README "Repeats"):
 * REPS times, a loop of `n` samples of each side, the side that goes first alternating per repeat
 * so a drift of the host (another process, a GC debt, a calibration) lands on both. Each repeat
 * prints its own p50 / p99 and p99 ratio with what the server and this client did meanwhile; the
 * table's line pools every repeat's samples, and its `repeats` column lists the per-repeat ratios
 * with their median, so one slow stretch shows as one repeat's ratio instead of the line's p99.
 * The sample index runs on across repeats (repeat r's sample i is r·n + i): the pooled outputs
 * line up with the queries as a single loop's would.
 */
import { pct } from './data';

export interface Loop<T> {
  ms: number[];
  out: T[];
}

/** What the server and this client did during one loop, as text (GCs, slow statements …). */
export interface Watch {
  start(): Promise<() => Promise<string>>;
}

export interface Paired<A, B> {
  ours: Loop<A>;
  client: Loop<B>;
  /** p99 ours / p99 client, per repeat. */
  ratios: number[];
  /** The table's `repeats` cell: `0.62 0.71 0.58 (median 0.62)`. */
  cell: string;
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

export async function paired<A, B>(o: {
  label: string;
  reps: number;
  n: number;
  ours: (i: number) => Promise<A>;
  client: (i: number) => Promise<B>;
  timed: <T>(n: number, fn: (i: number) => Promise<T>) => Promise<Loop<T>>;
  watch: Watch;
}): Promise<Paired<A, B>> {
  const ours: Loop<A> = { ms: [], out: [] };
  const client: Loop<B> = { ms: [], out: [] };
  const ratios: number[] = [];
  for (let r = 0; r < o.reps; r++) {
    const base = r * o.n;
    const notes: Record<'ours' | 'client', string> = { ours: '', client: '' };
    const loops: Record<'ours' | 'client', Loop<unknown>> = { ours: { ms: [], out: [] }, client: { ms: [], out: [] } };
    const order: Array<'ours' | 'client'> = r % 2 === 0 ? ['ours', 'client'] : ['client', 'ours'];
    for (const side of order) {
      const done = await o.watch.start();
      const fn = side === 'ours' ? o.ours : o.client;
      loops[side] = await o.timed(o.n, (i) => (fn as (i: number) => Promise<unknown>)(base + i));
      notes[side] = await done();
    }
    ours.ms.push(...loops.ours.ms);
    ours.out.push(...(loops.ours.out as A[]));
    client.ms.push(...loops.client.ms);
    client.out.push(...(loops.client.out as B[]));
    const ratio = pct(loops.ours.ms, 99) / pct(loops.client.ms, 99);
    ratios.push(ratio);
    const f = (l: Loop<unknown>) => `${pct(l.ms, 50).toFixed(2)} / ${pct(l.ms, 99).toFixed(2)}`;
    console.log(
      `${o.label} repeat ${r + 1}/${o.reps} (${order[0]} first): ours p50 / p99 ${f(loops.ours)} ms, client ${f(loops.client)} ms, p99 ratio ${ratio.toFixed(2)}` +
        `; ours: ${notes.ours}; client: ${notes.client}; ours slowest ${[...loops.ours.ms].sort((a, b) => b - a).slice(0, 6).map((x) => x.toFixed(2)).join(', ')} ms`,
    );
  }
  const cell = `${ratios.map((x) => x.toFixed(2)).join(' ')}${ratios.length > 1 ? ` (median ${median(ratios).toFixed(2)})` : ''}`;
  return { ours, client, ratios, cell };
}
