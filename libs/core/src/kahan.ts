/**
 * Elasticsearch's sum of doubles (`CompensatedSum`): Kahan summation in the order values are
 * added; a non-finite value turns the sum non-finite. Ten 0.1 sum to 1.0, where a plain loop
 * gives 0.9999999999999999. One implementation for the ES aggregation code (libs/es-compat) and
 * the executor's `kahan_sum` (libs/sql), so both paths round alike.
 */
export class KahanSum {
  value = 0;
  private delta = 0;
  add(x: number): this {
    if (!Number.isFinite(x)) { this.value = x + this.value; return this; }
    if (!Number.isFinite(this.value)) return this;
    const corrected = x + this.delta;
    const updated = this.value + corrected;
    this.delta = corrected - (updated - this.value);
    this.value = updated;
    return this;
  }
}
