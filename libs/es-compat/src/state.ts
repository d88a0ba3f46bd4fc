/**
 * Per-tenant state of the ES surface: the index views read through plans (cached by the
 * table's LSN, updated in place after this surface's own commits, derived state included), sequence numbers,
 * delete tombstones (versions survive a delete, as in Elasticsearch), and the write lock.
 */
import { parseJsonExact, stringifyJson } from '@mmdb/core';
import { col, get, lit, project, scan } from '@mmdb/plan';
import { Doc, type DocRow, type IndexView } from './doc';
import { flatten, type JsonObject } from './mapping';
import type { EsBackend } from './port';
import type { IndexRef } from './indices';
import { applyDelta } from './view-delta';

export interface Cached {
  lsn: number;
  view: IndexView;
  byId: Map<string, Doc>;
  dirty: boolean;
  maxSeq: number;
  descr: string;
  /** The store LSN at which `lsn` was last confirmed as the table's LSN. */
  checkedAt?: number;
}

/** The columns a document is read with. */
export const COLS = ['_id', '_source', '_version', '_seq_no', '_primary_term', '_routing'];

export class EsState {
  private readonly cache = new Map<string, Cached>();
  readonly tombstones = new Map<string, Map<string, { version: number; seq: number; at?: number }>>();
  private lock: Promise<unknown> = Promise.resolve();

  constructor(readonly backend: EsBackend) {}

  /** Runs `fn` alone among this tenant's ES writes. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(fn, fn);
    this.lock = run.catch(() => undefined);
    return run;
  }

  /** The documents of an index, read through a plan (scan → project) when the table changed. */
  async view(ref: IndexRef): Promise<IndexView> {
    return (await this.cached(ref)).view;
  }

  async cached(ref: IndexRef): Promise<Cached> {
    const id = ref.table.id;
    const descr = ref.table.description ?? '';
    let c = this.cache.get(id);
    // nothing was committed since this view was last checked: it is current
    const storeLsn = this.backend.lastLsn?.();
    if (c && storeLsn !== undefined && c.checkedAt === storeLsn && c.descr === descr) {
      if (c.dirty) this.rebuild(c);
      return c;
    }
    const lsn = await this.backend.tableLsn(id);
    if (c && c.lsn === lsn && c.descr === descr) {
      if (c.dirty) this.rebuild(c);
      c.checkedAt = storeLsn;
      return c;
    }
    if (c && c.lsn === lsn) {
      // mapping changed by this surface's own commit: same rows, new fields
      c = this.fresh(ref, lsn, [...c.byId.values()].map((d) => d.row));
    } else {
      const plan = ref.readOnly
        ? scan(id)
        : project(scan(id), COLS.map((n) => ({ name: n, expr: col(n) })));
      const rows = await this.backend.read(plan);
      c = this.fresh(ref, lsn, rows.map((r) => (ref.readOnly ? tableRow(ref, r) : toDocRow(r))));
    }
    c.checkedAt = storeLsn;
    this.cache.set(id, c);
    return c;
  }

  private fresh(ref: IndexRef, lsn: number, rows: DocRow[]): Cached {
    const view: IndexView = { name: ref.meta.es_index, uuid: ref.meta.uuid, fields: flatten(ref.meta.mappings), settings: ref.meta.settings, mappings: ref.meta.mappings, aliases: ref.meta.aliases, columns: ref.meta.values, docs: [], stats: new Map() };
    const byId = new Map<string, Doc>();
    let maxSeq = -1;
    for (const r of rows) {
      byId.set(r._id, new Doc(r, view));
      if (r._seq_no > maxSeq) maxSeq = r._seq_no;
    }
    const c: Cached = { lsn, view, byId, dirty: true, maxSeq, descr: ref.table.description ?? '' };
    this.rebuild(c);
    return c;
  }

  private rebuild(c: Cached): void {
    const docs = [...c.byId.values()].sort((a, b) => a.row._seq_no - b.row._seq_no);
    (c.view as { docs: Doc[] }).docs = docs;
    c.view.stats.clear();
    c.view.ordinals?.clear();
    c.dirty = false;
  }

  /**
   * After this surface committed `rows`/`deletes` at `lsn`, brings a current cache up to date
   * without a re-read. Only when no other frame landed between the view's LSN and `lsn` (the
   * writer drops the view otherwise: a write through another surface in between would be missed).
   */
  applyOwn(ref: IndexRef, before: number, lsn: number, puts: DocRow[], deletes: string[]): void {
    const c = this.cache.get(ref.table.id);
    if (!c || c.lsn !== before) return void this.cache.delete(ref.table.id);
    // the written documents take sequence numbers past every one the view holds, so the view stays
    // in _seq_no order as the kept documents followed by them: its derived state is adjusted by
    // the change (view-delta.ts), not rebuilt over every document at the next search
    const sorted = [...puts].sort((x, y) => x._seq_no - y._seq_no);
    const inOrder = !c.dirty && (!sorted.length || sorted[0]._seq_no > c.maxSeq);
    const removed: Doc[] = [];
    const added: Doc[] = [];
    for (const id of deletes) {
      const d = c.byId.get(id);
      if (d) { removed.push(d); c.byId.delete(id); }
    }
    for (const r of sorted) {
      const old = c.byId.get(r._id);
      if (old) removed.push(old);
      const d = new Doc(r, c.view);
      c.byId.set(r._id, d);
      added.push(d);
      if (r._seq_no > c.maxSeq) c.maxSeq = r._seq_no;
    }
    c.lsn = lsn;
    c.checkedAt = lsn;
    if (!inOrder) c.dirty = true;
    else applyDelta(c.view, removed, added);
  }

  /** One document by id, read through a `get` plan node (primary-key lookup on the shared executor). */
  async readOne(ref: IndexRef, id: string): Promise<DocRow | undefined> {
    const t = ref.table;
    let key: unknown = id;
    if (ref.readOnly) {
      if (t.primaryKey.length !== 1) return (await this.view(ref)).docs.find((d) => d.id === id)?.row;
      const ty = t.columns.find((c) => c.name === t.primaryKey[0])?.ty;
      if (ty === 'i64' || ty === 'f64' || ty === 'timestamp') {
        key = Number(id);
        if (!Number.isFinite(key as number)) return undefined;
      }
    }
    const node = get(t.id, [lit(key as string)]);
    const rows = await this.backend.read(ref.readOnly ? node : project(node, COLS.map((n) => ({ name: n, expr: col(n) }))));
    if (!rows.length) return undefined;
    return ref.readOnly ? tableRow(ref, rows[0]) : toDocRow(rows[0]);
  }

  /** Drops the cached view (the manifest changed); versions and sequence numbers stay. */
  invalidate(tableId: string): void {
    this.cache.delete(tableId);
  }

  /** Forgets everything about a dropped index. */
  forget(tableId: string): void {
    this.cache.delete(tableId);
    this.tombstones.delete(tableId);
    this.seqHigh.delete(tableId);
  }

  /** Versions of deleted documents, kept 60 s (Elasticsearch's index.gc_deletes) so a re-created document continues its version. */
  tomb(tableId: string): Map<string, { version: number; seq: number; at?: number }> {
    let t = this.tombstones.get(tableId);
    if (!t) { t = new Map(); this.tombstones.set(tableId, t); }
    const now = Date.now();
    if (t.size > 1000 || (this.lastGc.get(tableId) ?? 0) < now - 60_000) {
      for (const [id, x] of t) if (x.at !== undefined && x.at < now - 60_000) t.delete(id);
      this.lastGc.set(tableId, now);
    }
    return t;
  }

  private readonly lastGc = new Map<string, number>();
  /** The last `_seq_no` handed out per table (sequence numbers never go back, deletes included). */
  readonly seqHigh = new Map<string, number>();
}

export function toDocRow(r: Record<string, unknown>): DocRow {
  const src = typeof r._source === 'string' ? parseJsonExact(r._source) : r._source;
  return {
    _id: String(r._id), _source: (src ?? {}) as JsonObject, _version: Number(r._version ?? 1), _seq_no: Number(r._seq_no ?? 0),
    _primary_term: Number(r._primary_term ?? 1), _routing: (r._routing as string | null) ?? null,
  };
}

/** A row of a plain registered table, seen read-only as a document (pk as `_id`, columns as `_source`). */
function tableRow(ref: IndexRef, r: Record<string, unknown>): DocRow {
  const pk = ref.table.primaryKey.map((k) => r[k]);
  const src: JsonObject = {};
  for (const c of ref.table.columns) if (r[c.name] !== undefined && c.ty !== 'vector') src[c.name] = (c.ty === 'json' && typeof r[c.name] === 'string' ? safeParse(String(r[c.name])) : r[c.name]) as JsonObject[string];
  return { _id: pk.length === 1 ? String(pk[0]) : stringifyJson(pk), _source: src, _version: 1, _seq_no: 0, _primary_term: 1, _routing: null };
}

function safeParse(s: string): unknown {
  try { return parseJsonExact(s); } catch { return s; }
}
