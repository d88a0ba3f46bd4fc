/**
 * /ask under security. The English compiler's lexicon (value matching, "did you mean" suggestions,
 * interpretations) is built from stored values, and its intent cache maps a question's shape to a
 * plan chosen with that lexicon: both depend on what the reader may see. So the owner uses the
 * tenant's shared compiler (lexicon of every stored value, durable intent cache), and any other
 * user one of its own, per user and catalogue version (`policyKey`):
 * - its manifests are the schemas the user may read (a question naming another one is not
 *   understood, and no suggestion names its words or values);
 * - its values are read through the plan executor under the user's policy: rows the user's
 *   row-level security hides contribute nothing, a masked column contributes its masked values;
 * - its intent cache is its own, in memory (never the shared one, never durable): one user's
 *   policy-dependent plan never reaches another.
 */
import type { TableManifest } from '@mmdb/core';
import type { ValueSource } from '@mmdb/nlq';
import type { QueryOptions, SqlEngine } from '@mmdb/sql';
import type { Acting } from './catalog';

/** Rows read per table for a user's lexicon (the shared one reads up to 500,000 in key order). */
const USER_SCAN_LIMIT = 100_000;

/** Distinct text values of `columns` of a table as the user sees them (its policy and masks applied). */
export function policyValues(engine: SqlEngine, opts: QueryOptions): ValueSource {
  return async (table, columns, limit) => {
    const r = await engine.runPlan({ op: 'limit', input: { op: 'scan', schema: table }, limit: { kind: 'lit', value: USER_SCAN_LIMIT } }, { policy: opts.policy, policyKey: opts.policyKey });
    const lower = r.names.map((n) => n.toLowerCase());
    const out = new Map<string, string[] | null>();
    for (const c of columns) {
      const i = lower.indexOf(c.toLowerCase());
      const set = new Set<string>();
      if (i >= 0) for (const row of r.rows) {
        const v = row[i];
        if (typeof v === 'string') set.add(v);
        if (set.size > limit) break;
      }
      out.set(c, set.size > limit ? null : [...set]);
    }
    return out;
  };
}

/** The schemas the acting user may read (what its compiler knows of). */
export function readableManifests(a: Acting, all: readonly TableManifest[]): TableManifest[] {
  return all.filter((m) => a.can(m.id, 'read'));
}
