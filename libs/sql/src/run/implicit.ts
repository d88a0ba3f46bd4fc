/**
 * Implicit manifests: a standalone vector table (created by its first put) reads as
 * `{id TEXT PRIMARY KEY, metadata JSON}`, a standalone full-text table (created by a first
 * document POST) as `{doc_id TEXT PRIMARY KEY}`, so plans, SQL and policies reach them like
 * any table. Their rows come from the reader: every vector entry with its metadata; a full-text
 * table's rows are its hits (its documents cannot be listed, so a scan of one is refused).
 */
import { DbError, stringifyJson, type TableManifest } from '@mmdb/core';
import type { SqlTable } from '../catalog';
import type { Tuple } from '../values';
import type { Sources } from './sources';

const base = { foreign_keys: [], checks: [], indexes: [], relations: [] } as const;

export class ImplicitTables {
  private readonly made = new Map<string, TableManifest>();
  private readonly kinds = new WeakMap<TableManifest, 'vector' | 'fts'>();

  constructor(private readonly sources: Sources) {}

  manifest(id: string): TableManifest | undefined {
    const kind = this.sources.vector?.tableNames().includes(id) ? 'vector' : this.sources.fts?.standaloneFields(id).length ? 'fts' : undefined;
    if (!kind) return undefined;
    const k = `${kind}\u0000${id}`;
    let m = this.made.get(k);
    if (!m) {
      const dot = id.indexOf('.');
      const naming = { id, namespace: dot > 0 ? id.slice(0, dot) : '', table: dot > 0 ? id.slice(dot + 1) : id };
      m = kind === 'vector'
        ? { ...naming, ...base, fulltext: [], primary_key: ['id'], columns: [{ name: 'id', ty: 'str', required: true }, { name: 'metadata', ty: 'json', required: false }] }
        : {
            ...naming, ...base, primary_key: ['doc_id'], columns: [{ name: 'doc_id', ty: 'str', required: true }],
            fulltext: this.sources.fts!.standaloneFields(id).map((field) => ({ field, analyzer: 'english', k1: 1.2, b: 0.75 } as never)),
          };
      this.made.set(k, m);
      this.kinds.set(m, kind);
    }
    return m;
  }

  /** The kind of an implicit table, or undefined for a stored one. */
  kind(t: SqlTable): 'vector' | 'fts' | undefined {
    return this.kinds.get(t.manifest);
  }

  /** All rows of an implicit table; undefined for a stored table. */
  rows(t: SqlTable): Tuple[] | undefined {
    const kind = this.kinds.get(t.manifest);
    if (!kind) return undefined;
    if (kind === 'fts') throw new DbError('unsupported_sql', `${t.id} is a standalone full-text table: its documents are read through fts_search`, { construct: 'scan of a standalone full-text table' });
    const vt = this.sources.vector!.table(t.id);
    const out: Tuple[] = [];
    for (const e of vt.entries()) out.push([e.id, e.metadata === null ? null : stringifyJson(e.metadata), 0n]);
    return out;
  }
}
