/** Shared by the curve's children: timing of a query in steady state, and the process's memory. */
import { readFileSync } from 'fs';

export interface Timing {
  /** wall ms per run */
  wall: number;
  /** this process's CPU ms (user + system, all threads) per run */
  cpu: number;
  runs: number;
}

/**
 * Steady-state time of one query: warm-up runs until 2 runs and 500 ms (1 run when a run takes
 * over 2 s), `settle` after the first, then timed runs until 3 runs and 1 s (1 run when a run
 * takes over 2 s, so the 10M-row sizes fit the session).
 */
export async function time(fn: () => unknown, settle: () => Promise<void> = async () => undefined): Promise<Timing> {
  const w0 = performance.now();
  let slow = false;
  for (let i = 0; ; i++) {
    const t = performance.now();
    await fn();
    if (performance.now() - t > 2000) slow = true;
    if (i === 0) await settle();
    if (slow || (i >= 1 && performance.now() - w0 >= 500)) break;
  }
  await settle();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let runs = 0;
  while (runs < (slow ? 1 : 3) || (!slow && performance.now() - t0 < 1000)) {
    await fn();
    runs++;
  }
  const c = process.cpuUsage(c0);
  return { wall: (performance.now() - t0) / runs, cpu: (c.user + c.system) / 1000 / runs, runs };
}

/**
 * Latency percentiles (ms) of one call per query, after `warm` warm-up calls: wall, and this
 * process's CPU time over each call (steadier than wall on a loaded machine: time spent waiting
 * for a core is not in it). Means over the timed calls too.
 */
export async function percentiles<Q>(qs: Q[], fn: (q: Q) => unknown, warm: number): Promise<{ p50: number; p99: number; mean: number; cpuP50: number; cpuP99: number; cpuMean: number; n: number }> {
  for (let i = 0; i < warm; i++) await fn(qs[i % qs.length]);
  const ms: number[] = [];
  const cpu: number[] = [];
  for (const q of qs) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await fn(q);
    ms.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const mean = sum(ms) / ms.length;
  const cpuMean = sum(cpu) / cpu.length;
  ms.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  const at = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor(p * (xs.length - 1)))];
  return { p50: at(ms, 0.5), p99: at(ms, 0.99), mean, cpuP50: at(cpu, 0.5), cpuP99: at(cpu, 0.99), cpuMean, n: ms.length };
}

/** Resident set now and its peak (VmHWM), MB. */
export function memory(): { rssMB: number; peakMB: number; heapMB: number; externalMB: number } {
  const m = process.memoryUsage();
  let peak = NaN;
  try {
    const s = readFileSync('/proc/self/status', 'utf8');
    peak = Number(/VmHWM:\s+(\d+)/.exec(s)?.[1]) / 1024;
  } catch {
    /* not Linux */
  }
  const mb = (x: number) => Math.round((x / 1048576) * 10) / 10;
  return { rssMB: mb(m.rss), peakMB: Math.round(peak * 10) / 10, heapMB: mb(m.heapUsed), externalMB: mb(m.external) }; // external includes the ArrayBuffers (typed arrays, Buffers)
}

/**
 * Memory after full collections (run.js starts children with --expose-gc): what the process
 * holds live, without the garbage `memory()` counts in the JS heap. RSS still includes what the
 * allocators keep after freeing (V8's committed heap, glibc's free lists).
 */
export function settledMemory(): ReturnType<typeof memory> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) for (let i = 0; i < 3; i++) gc();
  return memory();
}

/** A child's answer: one line the driver parses. */
export function report(r: unknown): void {
  process.stdout.write(`RESULT ${JSON.stringify(r)}\n`);
}

export const log = (...a: unknown[]): void => console.error(`[${new Date().toISOString().slice(11, 19)}]`, ...a);
