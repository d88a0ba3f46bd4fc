/**
 * Keeps the k smallest (score, label) pairs seen: a bounded max-heap on parallel typed arrays.
 */
export class TopK {
  private readonly scores: Float64Array;
  private readonly labels: Int32Array;
  size = 0;

  constructor(readonly k: number) {
    this.scores = new Float64Array(k);
    this.labels = new Int32Array(k);
  }

  /** The worst score kept, or +∞ while fewer than k are held. */
  get bound(): number {
    return this.size < this.k ? Infinity : this.scores[0];
  }

  push(score: number, label: number): void {
    const { scores, labels } = this;
    if (this.size < this.k) {
      let i = this.size++;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (scores[p] >= score) break;
        scores[i] = scores[p];
        labels[i] = labels[p];
        i = p;
      }
      scores[i] = score;
      labels[i] = label;
      return;
    }
    if (score >= scores[0]) return;
    let i = 0;
    const n = this.size;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && scores[r] > scores[l] ? r : l;
      if (scores[c] <= score) break;
      scores[i] = scores[c];
      labels[i] = labels[c];
      i = c;
    }
    scores[i] = score;
    labels[i] = label;
  }

  /** The kept pairs, closest first. */
  sorted(): Array<{ label: number; score: number }> {
    const out: Array<{ label: number; score: number }> = [];
    for (let i = 0; i < this.size; i++) out.push({ label: this.labels[i], score: this.scores[i] });
    return out.sort((a, b) => a.score - b.score || a.label - b.label);
  }
}
