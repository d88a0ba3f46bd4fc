import { DbError } from '@mmdb/core';
import type { Affinity, Collation } from '@mmdb/plan';
import type { Tuple } from '../values';

/** One output column of an operator; `coll`: the collating sequence DISTINCT and set operations tell its values apart by (absent: BINARY). */
export interface ColInfo { readonly name: string; readonly aff?: Affinity; readonly coll?: Collation }

/** Name resolution for compiled expressions: this operator's input columns, then enclosing queries'. */
export class Scope {
  private readonly index = new Map<string, number>();
  constructor(readonly cols: readonly ColInfo[], readonly parent: Scope | null = null) {
    cols.forEach((c, i) => {
      const k = c.name.toLowerCase();
      if (!this.index.has(k)) this.index.set(k, i);
      else this.index.set(k, -2); // ambiguous
    });
  }

  /** Index of `name` here, -1 when absent. Unqualified names also match a unique `x.name`. */
  find(name: string): number {
    const k = name.toLowerCase();
    const i = this.index.get(k);
    if (i === -2) throw new DbError('validation_failed', `ambiguous column name: ${name}`);
    if (i !== undefined) return i;
    if (!k.includes('.')) {
      let found = -1;
      this.cols.forEach((c, j) => {
        const n = c.name.toLowerCase();
        if (n.endsWith('.' + k)) {
          if (found >= 0) throw new DbError('validation_failed', `ambiguous column name: ${name}`);
          found = j;
        }
      });
      return found;
    }
    return -1;
  }

  /** (depth, index) of a name: depth 0 is this scope. */
  resolve(name: string, depth = 0): { depth: number; index: number; aff?: Affinity; coll?: Collation } {
    const i = this.find(name);
    if (i >= 0) return { depth, index: i, aff: this.cols[i].aff, coll: this.cols[i].coll };
    if (this.parent) return this.parent.resolve(name, depth + 1);
    throw new DbError('validation_failed', `no such column: ${name}`, { column: name });
  }
}

/** Run-time environment: the current row and the rows of enclosing queries. */
export interface Env { readonly row: Tuple; readonly up: Env | null }
