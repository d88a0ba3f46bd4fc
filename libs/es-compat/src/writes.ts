/**
 * Document writes (index, create, update, delete) as one batch: checks against the current
 * documents (versions, seq_no, op_type), dynamic mapping, then one commit holding the
 * manifest changes and every row. A failed item fails alone; the rest commit together.
 */
import { checkCompletionContexts } from './completion-contexts';
import { DbError, stringifyJson } from '@mmdb/core';
import { refuseInexact } from './numbers';
import { EsError, documentMissing, illegalArgument, validation, versionConflict } from './errors';
import { applyDynamic, docValues, flatten, valuesAt, type Json, type JsonObject } from './mapping';
import { addedColumns, manifestToml, withColumns, type IndexMeta, type IndexRef } from './indices';
import { MULTI, MV, columnLayout, typedCells } from './columns';
import { carryTyped } from './typed';
import { copiedInto } from './plan-aggs';
import type { DocRow } from './doc';
import type { EsChange, EsExpect } from './port';
import type { EsState } from './state';
import { scriptRefused } from './query';
import { filterSource, sourceSpec } from './source-filter';

export interface WriteOp {
  readonly action: 'index' | 'create' | 'update' | 'delete';
  readonly ref: IndexRef;
  readonly id: string;
  readonly source?: JsonObject;
  readonly ifSeqNo?: number;
  readonly ifPrimaryTerm?: number;
  readonly version?: number;
  readonly versionType?: string;
  readonly routing?: string;
  /** update: the request body ({doc, upsert, doc_as_upsert, detect_noop, _source}). */
  readonly update?: JsonObject;
}

export interface ItemResult { readonly status: number; readonly body: JsonObject }

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const SHARDS = { total: 2, successful: 1, failed: 0 };

function deepMerge(a: JsonObject, b: JsonObject): JsonObject {
  const out: JsonObject = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = isObj(v) && isObj(out[k]) ? deepMerge(out[k] as JsonObject, v) : v;
  return out;
}

function same(a: Json, b: Json): boolean {
  return stringifyJson(a) === stringifyJson(b);
}

/** Validates an op's parameters before any state is read (Elasticsearch's request validation). */
export function validateOp(op: WriteOp): void {
  const errs: string[] = [];
  if (op.ifSeqNo !== undefined && op.ifPrimaryTerm === undefined) errs.push(`ifSeqNo is set, but primary term is [0]`);
  if (op.ifPrimaryTerm !== undefined && op.ifSeqNo === undefined) errs.push('ifPrimaryTerm is set, but ifSeqNo is not');
  const vt = op.versionType ?? 'internal';
  if (!['internal', 'external', 'external_gte', 'force'].includes(vt)) throw illegalArgument(`No version type match [${vt}]`);
  if (op.version !== undefined && vt === 'internal') {
    errs.push('internal versioning can not be used for optimistic concurrency control. Please use `if_seq_no` and `if_primary_term` instead');
  }
  if (vt !== 'internal' && op.version === undefined) errs.push(`illegal version value [-3] for version type [${vt.toUpperCase()}]`);
  if (op.action === 'create' && vt !== 'internal') errs.push('create operations only support internal versioning. use index instead');
  if (op.action === 'update' && vt !== 'internal') errs.push('can\'t provide version in update requests');
  if (Buffer.byteLength(op.id) > 512) errs.push(`id [${op.id}] is too long, must be no longer than 512 bytes but was: ${Buffer.byteLength(op.id)}`);
  if (errs.length) throw validation(errs);
}

/** Per table of a batch; `values`: the doc values each written document was validated with (reused for its columns). */
interface Pending { meta: IndexMeta; readonly orig: IndexMeta; changed: boolean; puts: DocRow[]; deletes: string[]; values: Map<string, Seen> }

/** How many times a batch is re-run on fresh state after a write through another surface raced it. */
const RETRIES = 8;

/**
 * Runs the ops in order under the tenant's write lock; one result per op. Each committed row
 * carries what the batch read of it (`EsChange.expect`), checked in the commit: when a write
 * through /rows or /sql changed one of those rows meanwhile, the commit fails as a whole, the
 * views of the tables are dropped and the batch runs again on the committed rows, so its
 * `if_seq_no`, `op_type=create` and version checks answer Elasticsearch's 409 against them.
 */
export async function writeBatch(state: EsState, ops: WriteOp[]): Promise<ItemResult[]> {
  return state.exclusive(async () => {
    const tids = [...new Set(ops.map((o) => o.ref.table.id))];
    for (let attempt = 0; ; attempt++) {
      // tombstones are updated as items run: a re-run starts from the ones before the batch
      const tombs = new Map(tids.map((tid) => [tid, new Map(state.tomb(tid))]));
      try {
        return await runBatch(state, ops);
      } catch (e) {
        if (!(e instanceof DbError) || e.code !== 'write_conflict') throw e;
        if (attempt >= RETRIES) {
          // other surfaces kept changing these rows: the whole request answers the conflict, nothing written
          const op = ops[0];
          throw versionConflict(op.id, `the documents were changed through another surface ${RETRIES + 1} times while this write ran; nothing was written, retry the request`, op.ref.meta.es_index, op.ref.meta.uuid);
        }
        for (const tid of tids) {
          state.invalidate(tid);
          const t = state.tomb(tid);
          t.clear();
          for (const [k, v] of tombs.get(tid)!) t.set(k, v);
        }
      }
    }
  });
}

async function runBatch(state: EsState, ops: WriteOp[]): Promise<ItemResult[]> {
  const results: Array<ItemResult | null> = [];
  const expects = new Map<string, Map<string, EsExpect>>();
  const pending = new Map<string, Pending>();
  const overlay = new Map<string, Map<string, DocRow | null>>();
  const seqs = new Map<string, number>();
  const caches = new Map<string, Awaited<ReturnType<EsState['cached']>>>();
  for (const op of ops) {
    const tid = op.ref.table.id;
    if (!caches.has(tid)) {
      const c = await state.cached(op.ref);
      caches.set(tid, c);
      let tombMax = -1;
      for (const t of state.tomb(tid).values()) if (t.seq > tombMax) tombMax = t.seq;
      seqs.set(tid, Math.max(c.maxSeq, tombMax, state.seqHigh.get(tid) ?? -1));
    }
    let p = pending.get(tid);
    if (!p) {
      p = { meta: op.ref.meta, orig: op.ref.meta, changed: false, puts: [], deletes: [], values: new Map() };
      // an index made before typed columns gets them with this write (and a backfill below)
      if (!op.ref.readOnly && !op.ref.meta.values) p = { ...p, meta: withColumns(p.meta), changed: true };
      pending.set(tid, p);
    }
    let ov = overlay.get(tid);
    if (!ov) { ov = new Map(); overlay.set(tid, ov); }
    let ex = expects.get(tid);
    if (!ex) { ex = new Map(); expects.set(tid, ex); }
    const stored = caches.get(tid)!.byId.get(op.id)?.row ?? null;
    if (!ex.has(op.id)) ex.set(op.id, stored && { version: stored._version, seqNo: stored._seq_no });
    try {
      results.push(applyOp(op, p, ov, stored, state.tomb(tid), () => {
        const n = seqs.get(tid)! + 1;
        seqs.set(tid, n);
        return n;
      }));
    } catch (e) {
      if (!(e instanceof EsError)) throw e;
      results.push({ status: e.status, body: { _index: op.ref.meta.es_index, _type: '_doc', _id: op.id, status: e.status, error: e.item() as Json } });
    }
  }
  const changes: EsChange[] = [];
  for (const [, p] of pending) if (p.changed) changes.push({ op: 'schema_put', toml: manifestToml(p.meta) });
  const deltas = new Map<string, Map<string, number> | null>();
  for (const [tid, ov] of overlay) {
    const p = pending.get(tid)!;
    const cache = caches.get(tid)!;
    const delta = p.changed ? null : new Map<string, number>();
    const layout = columnLayout(p.meta.mappings, p.meta.values);
    const fields = flatten(p.meta.mappings);
    for (const [id, row] of ov) {
      const expect = expects.get(tid)!.get(id)!;
      let stored: Record<string, Json> | null = null;
      if (row) changes.push({ op: 'put', schema: tid, row: (stored = toRow(row, p.meta, p.values.get(id))), expect });
      else changes.push({ op: 'delete', schema: tid, pk: [id], expect });
      if (!delta) continue;
      // rows per `_multi` and `_mv` column: the new row's, less the replaced one's (typed.ts carries the count)
      if (stored) for (const c of multiKeys(stored)) delta.set(c, (delta.get(c) ?? 0) + 1);
      const old = cache.byId.get(id)?.row;
      if (old && layout.length) {
        const was: Record<string, Json> = {};
        typedCells(layout, docValues(fields, old._source), was, p.meta.mv);
        for (const c of multiKeys(was)) delta.set(c, (delta.get(c) ?? 0) - 1);
      }
    }
    deltas.set(tid, delta);
    // typed columns new to the index: the stored documents holding those fields are rewritten in this frame
    if (p.changed) {
      for (const b of backfill([...cache.byId.values()].map((d) => d.row), p.meta, addedColumns(p.orig, p.meta), (id) => ov.has(id))) {
        changes.push({ op: 'put', schema: tid, row: b.row, expect: b.expect });
      }
    }
  }
  if (changes.length) {
    const befores = new Map<string, number>();
    // no other frame may touch a table between its view's LSN and this commit, or the view updated
    // in place would miss it (a write through /rows, /sql, a migration): such a view is dropped
    const first = state.backend.lastLsn?.();
    for (const [tid, c] of caches) {
      if (first !== undefined && c.checkedAt !== first && (await state.backend.tableLsn(tid)) !== c.lsn) continue;
      befores.set(tid, c.lsn);
    }
    const last = state.backend.lastLsn?.();
    const lsn = await state.backend.commit(changes);
    for (const [tid, n] of seqs) state.seqHigh.set(tid, n);
    if (last === undefined || last !== first || lsn !== last + 1) befores.clear();
    for (const tid of caches.keys()) carryTyped(state.backend, tid, befores.get(tid), lsn, deltas.get(tid) ?? null);
    for (const tid of caches.keys()) if (!befores.has(tid)) state.invalidate(tid);
    for (const op of ops) {
      const tid = op.ref.table.id;
      const ov = overlay.get(tid);
      if (!ov || !befores.has(tid)) continue;
      const p = pending.get(tid)!;
      const ref: IndexRef = p.changed ? { ...op.ref, meta: p.meta, table: { ...op.ref.table, description: JSON.stringify(p.meta) } } : op.ref;
      state.applyOwn(ref, befores.get(tid)!, lsn, [...ov.values()].filter((r): r is DocRow => r !== null), [...ov].filter(([, r]) => r === null).map(([id]) => id));
      if (p.changed) state.invalidate(tid);
      befores.delete(tid);
    }
  }
  for (const [tid, n] of seqs) state.seqHigh.set(tid, n);
  return results as ItemResult[];
}

/** The doc values a write computed while validating a source (with the mappings they follow), reused for its columns. */
interface Seen { readonly source: JsonObject; readonly mappings: JsonObject; readonly values: Map<string, Json[]> }

/** The stored row of a document: the key, `_source` verbatim, versions, text columns for the fts postings and typed columns. */
export function toRow(r: DocRow, meta: IndexMeta, seen?: Seen): Record<string, Json> {
  // a column left out reads as null (no `_routing: null` stored in every row)
  const row: Record<string, Json> = { _id: r._id, _source: r._source, _version: r._version, _seq_no: r._seq_no, _primary_term: r._primary_term };
  if (r._routing !== undefined && r._routing !== null) row._routing = r._routing;
  const cols = Object.entries(meta.text);
  const layout = columnLayout(meta.mappings, meta.values);
  if (!cols.length && !layout.length) return row;
  const values = seen && seen.source === r._source && seen.mappings === meta.mappings ? seen.values : docValues(flatten(meta.mappings), r._source);
  // the text each text field indexes (copy_to targets included), for the fts postings of the frame
  for (const [path, colName] of cols) {
    const vs = values.get(path) ?? valuesAt(r._source, path).filter((v) => v !== null && typeof v !== 'object');
    if (vs.length) row[colName] = vs.map(String).join('\n');
  }
  typedCells(layout, values, row, meta.mv);
  return row;
}

/** A row's `_multi` columns, and its `_mv` ones as `mv:<column>` (typed.ts counts rows per key). */
function multiKeys(row: Record<string, Json>): string[] {
  const out = typeof row[MULTI] === 'string' ? (row[MULTI] as string).split(' ') : [];
  const mv = row[MV];
  if (mv && typeof mv === 'object' && !Array.isArray(mv)) for (const c of Object.keys(mv)) out.push(`mv:${c}`);
  return out;
}

/** The rows of `docs` holding a value of one of `paths` (their new typed columns need a backfill), with what was read of each. */
export function backfill(docs: Iterable<DocRow>, meta: IndexMeta, paths: string[], skip: (id: string) => boolean): Array<{ row: Record<string, Json>; expect: EsExpect }> {
  if (!paths.length) return [];
  const fields = flatten(meta.mappings);
  const raw = [...new Set(paths.map((p) => fields.get(p)).map((f) => f && (f.aliasOf ?? f.parent ?? f.path)))].filter((p): p is string => !!p);
  const copies = paths.some((p) => copiedInto({ fields }, p));
  const out: Array<{ row: Record<string, Json>; expect: EsExpect }> = [];
  for (const d of docs) {
    if (skip(d._id)) continue;
    // cheap pre-check: a document holds none of the new fields' source values (and nothing copies into them)
    if (!copies && !raw.some((p) => valuesAt(d._source, p).length)) continue;
    const values = docValues(fields, d._source);
    if (!paths.some((p) => values.get(p)?.length)) continue;
    out.push({ row: toRow(d, meta, { source: d._source, mappings: meta.mappings, values }), expect: { version: d._version, seqNo: d._seq_no } });
  }
  return out;
}

function applyOp(op: WriteOp, p: Pending, ov: Map<string, DocRow | null>, stored: DocRow | null, tombs: Map<string, { version: number; seq: number; at?: number }>, nextSeq: () => number): ItemResult {
  validateOp(op);
  const tomb = tombs.get(op.id);
  const cur = ov.has(op.id) ? ov.get(op.id)! : stored;
  const index = op.ref.meta.es_index;
  const uuid = op.ref.meta.uuid;
  if (op.ref.readOnly) throw new EsError(400, 'illegal_argument_exception', `index [${index}] is a registered table read through this surface; it is read-only here (write rows through /rows or /sql)`);
  const conflict = (reason: string) => versionConflict(op.id, reason, index, uuid);
  if (op.ifSeqNo !== undefined) {
    if (!cur) throw conflict(`required seqNo [${op.ifSeqNo}], primary term [${op.ifPrimaryTerm}]. but no document was found`);
    if (cur._seq_no !== op.ifSeqNo || cur._primary_term !== op.ifPrimaryTerm) {
      throw conflict(`required seqNo [${op.ifSeqNo}], primary term [${op.ifPrimaryTerm}]. current document has seqNo [${cur._seq_no}] and primary term [${cur._primary_term}]`);
    }
  }
  const vt = op.versionType ?? 'internal';
  const lastVersion = cur ? cur._version : tomb?.version ?? 0;
  if (vt === 'external' || vt === 'external_gte') {
    const v = op.version!;
    if (cur || (tomb && op.action !== 'delete')) {
      const curV = cur ? cur._version : tomb!.version;
      if (vt === 'external' ? curV >= v : curV > v) {
        if (cur || op.action === 'delete') throw conflict(`current version [${curV}] is higher ${vt === 'external' ? 'or equal to' : 'than'} the one provided [${v}]`);
      }
    }
  }
  const base = { _index: index, _type: '_doc', _id: op.id };
  if (op.action === 'delete') {
    if (!cur) {
      const version = vt === 'internal' ? (tomb?.version ?? 0) + 1 : op.version!;
      const seq = nextSeq();
      tombs.set(op.id, { version, seq, at: Date.now() });
      return { status: 404, body: { ...base, _version: version, result: 'not_found', _shards: SHARDS, _seq_no: seq, _primary_term: 1 } };
    }
    const version = vt === 'internal' ? cur._version + 1 : op.version!;
    const seq = nextSeq();
    ov.set(op.id, null);
    p.deletes.push(op.id);
    tombs.set(op.id, { version, seq, at: Date.now() });
    return { status: 200, body: { ...base, _version: version, result: 'deleted', _shards: SHARDS, _seq_no: seq, _primary_term: 1 } };
  }
  let source: JsonObject;
  let created = !cur;
  let upsertGet = false;
  if (op.action === 'update') {
    const u = op.update ?? {};
    if (u.script !== undefined) throw scriptRefused('script');
    if (u.doc !== undefined && !isObj(u.doc)) throw new EsError(400, 'parsing_exception', '[doc] must be an object');
    if (u.doc === undefined && u.upsert === undefined) throw validation(['script or doc is missing']);
    if (!cur) {
      if (u.doc_as_upsert === true && isObj(u.doc)) source = u.doc;
      else if (isObj(u.upsert)) source = u.upsert;
      else throw documentMissing(op.id, index, uuid);
      created = true;
    } else {
      source = isObj(u.doc) ? deepMerge(cur._source, u.doc) : cur._source;
      if (u.detect_noop !== false && same(source, cur._source)) {
        const body: JsonObject = { ...base, _version: cur._version, result: 'noop', _shards: { total: 0, successful: 0, failed: 0 }, _seq_no: cur._seq_no, _primary_term: cur._primary_term };
        if (u._source !== undefined) body.get = getPart(cur, u._source);
        return { status: 200, body };
      }
    }
    upsertGet = u._source !== undefined;
  } else {
    source = op.source ?? {};
    if (cur && op.action === 'create') throw conflict(`document already exists (current version [${cur._version}])`);
  }
  // exact numbers (numbers.ts), dynamic mapping, then the document's values checked against the mapping (malformed → mapper_parsing_exception)
  refuseInexact(source, op.id);
  const grown = applyDynamic(p.meta.mappings, source);
  const mappings = grown ?? p.meta.mappings;
  const fields = flatten(mappings);
  const values = docValues(fields, source, op.id);
  checkCompletionContexts(fields, source, values);
  p.values.set(op.id, { source, mappings, values });
  if (grown) {
    p.meta = withColumns({ ...p.meta, mappings: grown });
    p.changed = true;
  }
  const version = vt === 'internal' ? lastVersion + 1 : op.version!;
  const seq = nextSeq();
  const row: DocRow = { _id: op.id, _source: source, _version: version, _seq_no: seq, _primary_term: 1, _routing: op.routing ?? null };
  ov.set(op.id, row);
  p.puts.push(row);
  const body: JsonObject = { _index: index, _type: '_doc', _id: op.id, _version: version, result: created ? 'created' : 'updated', _shards: SHARDS, _seq_no: seq, _primary_term: 1 };
  if (upsertGet) body.get = getPart(row, op.update!._source);
  return { status: created ? 201 : 200, body };
}

function getPart(r: DocRow, src: Json | undefined): JsonObject {
  const out: JsonObject = { _seq_no: r._seq_no, _primary_term: r._primary_term, found: true };
  const s = filterSource(r._source, sourceSpec(src));
  if (s !== undefined) out._source = s;
  return out;
}
