/** Closest table, column or value names to words the compiler did not understand. */
import type { Lexicon } from './lexicon';
import { STOP } from './words';

export function distance(a: string, b: string): number {
  const d = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0];
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const t = d[j];
      d[j] = Math.min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = t;
    }
  }
  return d[b.length];
}

export function suggest(words: readonly string[], lx: Lexicon, max = 5): string[] {
  const names = new Set<string>();
  for (const t of lx.schema.tables.values()) {
    names.add(t.table);
    for (const c of t.cols.values()) if (!c.isKey) names.add(c.name);
  }
  const values = [...lx.values.values()].flat().map((h) => h.value);
  const scored: Array<[string, number]> = [];
  for (const w of new Set(words.map((x) => x.toLowerCase()).filter((x) => x.length > 2 && !STOP.has(x)))) {
    const max = Math.max(1, Math.floor(w.length / 3));
    for (const n of [...names, ...values.slice(0, 20_000)]) {
      const cand = n.toLowerCase();
      if (Math.abs(cand.length - w.length) > max && !cand.includes(' ') && !cand.includes('_')) continue;
      const parts = cand.split(/[\s_]+/);
      const dist = Math.min(distance(w, cand), ...parts.map((p) => distance(w, p) + (parts.length > 1 ? 1 : 0)));
      if (dist <= Math.max(1, Math.floor(w.length / 3)) && dist < w.length) scored.push([n, dist]);
    }
  }
  return [...new Set(scored.sort((a, b) => a[1] - b[1]).map((s) => s[0]))].slice(0, max);
}
