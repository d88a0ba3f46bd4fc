/**
 * Grants on POST /sql writes. Reads need no gate here: every leaf of every statement's plan is
 * checked by the user's policy (security/policy.ts). A statement that writes needs the grant on
 * its table: INSERT → insert, UPDATE → update, DELETE → delete; DDL (CREATE/DROP/ALTER, indexes,
 * views) → the owner. UPDATE and DELETE touch only the rows the user's USING predicates show (their
 * scans run under the policy). A user under a WITH CHECK policy of the table writes through SQL
 * too: the executor checks every new row an INSERT or UPDATE writes (the Policy port's
 * `writeCheck`, libs/sql run/write-check.ts) and fails the statement (its script) with 403.
 * INSERT OR REPLACE by a user under a USING policy of the table is refused (403): it would
 * overwrite an existing row without reading it, a hidden one included (as PUT onto a hidden row).
 */
import { DbError } from '@mmdb/core';
import { parseSql, type SqlEngine } from '@mmdb/sql';
import type { Acting, Privilege } from './catalog';

const WRITES: Record<string, Privilege> = { insert: 'insert', update: 'update', delete: 'delete' };
const FREE = new Set(['select', 'begin', 'commit', 'rollback']);

export function gateSql(a: Acting | undefined, engine: SqlEngine, sql: string): void {
  if (!a || a.isOwner) return;
  for (const st of parseSql(sql)) {
    if (FREE.has(st.kind)) continue;
    const priv = WRITES[st.kind];
    if (!priv) throw new DbError('forbidden', `user ${a.name} may not run ${st.kind.replace('_', ' ').toUpperCase()} (owner only)`);
    const table = (st as { table: string }).table;
    let id = table;
    try {
      id = engine.exec.table(table).manifest.id;
    } catch {
      /* an unknown table: checked under its written name, so a user without grants learns nothing */
    }
    a.require(id, priv);
    // REPLACE would overwrite an existing row without reading it: one the user's policy hides included
    if ((st as { orConflict?: string }).orConflict === 'replace' && a.catalog.policiesFor(id, a.name).some((p) => p.using !== undefined)) {
      throw new DbError('forbidden', `user ${a.name} reads ${id} under a row-level security policy: INSERT OR REPLACE could overwrite a row it may not see (use INSERT or UPDATE)`, { schema: id });
    }
  }
}
