/** Document APIs: index, create, get, exists, get_source, delete, update, _mget, _bulk. */
import * as crypto from 'crypto';
import { parseJsonExact } from '@mmdb/core';
import { EsError, illegalArgument, indexNotFound, parsingError, validation } from './errors';
import { docValues, flatten, type JsonObject, type Json } from './mapping';
import type { EsTenant } from './tenant';
import { writeBatch, type WriteOp, type ItemResult } from './writes';
import { filterSource, sourceParams, sourceSpec } from './source-filter';
import type { EsResponse, Params } from './types';
import { activeShards } from './search-api';
import { editDistance } from './query';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An Elasticsearch-style auto-generated id (20 url-safe characters). */
export function autoId(): string {
  return crypto.randomBytes(15).toString('base64url');
}

const intParam = (v: string | undefined, name: string): number | undefined => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw illegalArgument(`Failed to parse int parameter [${name}] with value [${v}]`);
  return n;
};

function opParams(q: Params | JsonObject): Pick<WriteOp, 'ifSeqNo' | 'ifPrimaryTerm' | 'version' | 'versionType' | 'routing'> {
  const s = (k: string) => (q[k] === undefined || q[k] === null ? undefined : String(q[k]));
  return {
    ifSeqNo: intParam(s('if_seq_no'), 'if_seq_no'),
    ifPrimaryTerm: intParam(s('if_primary_term'), 'if_primary_term'),
    version: intParam(s('version'), 'version'),
    versionType: s('version_type'),
    routing: s('routing') ?? s('_routing'),
  };
}

function single(r: ItemResult, q: Params): EsResponse {
  if (r.body.error) {
    const e = r.body.error as JsonObject;
    const err = new EsError(r.status, String(e.type), String(e.reason), Object.fromEntries(Object.entries(e).filter(([k]) => k !== 'type' && k !== 'reason')));
    return { status: err.status, body: err.body() };
  }
  const body = { ...r.body };
  if (q.refresh === 'true' || q.refresh === '') body.forced_refresh = true;
  return { status: r.status, body };
}

export async function indexDoc(t: EsTenant, index: string, id: string | undefined, body: unknown, q: Params, forceCreate = false): Promise<EsResponse> {
  activeShards(q, index);
  if (!isObj(body)) throw parsingError('request body is required');
  if (q.pipeline !== undefined) throw illegalArgument(`pipeline with id [${q.pipeline}] does not exist`);
  const opType = forceCreate ? 'create' : q.op_type ?? (id === undefined ? 'create' : 'index');
  if (!['index', 'create'].includes(opType)) throw illegalArgument(`opType must be 'create' or 'index', found: [${opType}]`);
  if (id !== undefined && id.length === 0) throw validation(['id is missing']);
  const ref = await t.writeRef(index);
  const op: WriteOp = { action: opType as 'index' | 'create', ref, id: id ?? autoId(), source: body, ...opParams(q) };
  const [r] = await writeBatch(t.state, [op]);
  return single(r, q);
}

export async function deleteDoc(t: EsTenant, index: string, id: string, q: Params): Promise<EsResponse> {
  activeShards(q, index);
  const ref = t.ref(index) ?? t.refs().find((x) => index in x.meta.aliases);
  if (!ref) throw indexNotFound(index);
  const [r] = await writeBatch(t.state, [{ action: 'delete', ref, id, ...opParams(q) }]);
  return single(r, q);
}

export async function updateDoc(t: EsTenant, index: string, id: string, body: unknown, q: Params): Promise<EsResponse> {
  activeShards(q, index);
  if (!isObj(body)) throw parsingError('request body is required');
  const allowed = ['doc', 'upsert', 'doc_as_upsert', 'detect_noop', 'script', 'scripted_upsert', '_source', 'lang', 'params'];
  for (const k of Object.keys(body)) {
    if (allowed.includes(k)) continue;
    const near = allowed.find((a) => editDistance(a, k, 2) <= 2);
    throw new EsError(400, 'x_content_parse_exception', `[1:2] [UpdateRequest] unknown field [${k}]${near ? ` did you mean [${near}]?` : ''}`);
  }
  const ref = await t.writeRef(index);
  const upd: JsonObject = { ...body };
  if (q._source !== undefined || q._source_includes !== undefined || q._source_excludes !== undefined) {
    const s = sourceParams(q);
    upd._source = s ? { includes: s.includes, excludes: s.excludes } : true;
  }
  const [r] = await writeBatch(t.state, [{ action: 'update', ref, id, update: upd, ...opParams(q), version: undefined, versionType: q.version_type }]);
  if (q.version !== undefined) throw validation(['internal versioning can not be used for optimistic concurrency control. Please use `if_seq_no` and `if_primary_term` instead']);
  return single(r, q);
}

/** The get response of one document (through the plan-read view). */
export async function getDoc(t: EsTenant, index: string, id: string, q: Params, mode: 'get' | 'source' | 'exists'): Promise<EsResponse> {
  const rs = t.resolve(index);
  if (!rs.length) throw indexNotFound(index);
  const ref = rs[0].ref;
  t.counter(ref).get++;
  let row = await t.state.readOne(ref, id);
  // with several (virtual) shards, a get routed elsewhere than the document does not find it
  const shards = Number((ref.meta.settings as Record<string, unknown>)['index.number_of_shards'] ?? 1);
  if (row && shards > 1 && (row._routing ?? undefined) !== (q.routing ?? undefined)) row = undefined;
  const fields = flatten(ref.meta.mappings);
  const d = row ? { row, source: row._source, values: (f: string) => docValues(fields, row._source).get(f) ?? [] } : undefined;
  const base = { _index: ref.meta.es_index, _type: '_doc', _id: id };
  const sourceEnabled = !(isObj(ref.meta.mappings._source) && (ref.meta.mappings._source as JsonObject).enabled === false);
  if (d && q.version !== undefined) {
    const v = Number(q.version);
    // every version type reads as Elasticsearch's isVersionConflictForReads: the current version must equal the one given
    if (d.row._version !== v) {
      throw new EsError(409, 'version_conflict_engine_exception', `[${id}]: version conflict, current version [${d.row._version}] is different than the one provided [${v}]`, { index_uuid: ref.meta.uuid, shard: '0', index: ref.meta.es_index });
    }
  }
  if (mode === 'exists') return { status: d && (sourceEnabled || !q._exists_source) ? 200 : 404 };
  if (mode === 'source') {
    if (!d) throw new EsError(404, 'resource_not_found_exception', `Document not found [${ref.meta.es_index}]/[_doc]/[${id}]`);
    if (!sourceEnabled) throw new EsError(404, 'resource_not_found_exception', `Source not found [${ref.meta.es_index}]/[_doc]/[${id}]`);
    return { status: 200, body: filterSource(d.source, sourceParams(q)) ?? {} };
  }
  if (!d) return { status: 404, body: { ...base, found: false } };
  const out: JsonObject = { ...base, _version: d.row._version, _seq_no: d.row._seq_no, _primary_term: d.row._primary_term };
  if (d.row._routing) out._routing = d.row._routing;
  out.found = true;
  const stored = q.stored_fields;
  const storedList = stored === undefined ? [] : stored.split(',');
  const spec = sourceParams(q, stored !== undefined && !storedList.includes('_source') ? { enabled: false, includes: [], excludes: [] } : undefined);
  if (sourceEnabled) {
    const src = filterSource(d.source, spec);
    if (src !== undefined) out._source = src;
  }
  if (stored !== undefined) {
    const got: JsonObject = {};
    for (const f of stored.split(',')) {
      const fd = fields.get(f);
      if (fd && fd.def.store === true) got[f] = d.values(f);
    }
    if (Object.keys(got).length) out.fields = got;
  }
  return { status: 200, body: out };
}

export async function mget(t: EsTenant, index: string | undefined, body: unknown, q: Params): Promise<EsResponse> {
  if (!isObj(body)) throw validation(['no documents to get']);
  let docs: JsonObject[];
  if (Array.isArray(body.docs)) docs = body.docs as JsonObject[];
  else if (Array.isArray(body.ids)) docs = body.ids.map((id) => ({ _id: id }));
  else if (body.docs !== undefined || body.ids !== undefined) throw parsingError('Unknown key for a START_OBJECT in [docs]');
  else throw validation(['no documents to get']);
  if (!docs.length) throw validation(['no documents to get']);
  const errs: string[] = [];
  docs.forEach((d, i) => {
    if ((d._index ?? index) === undefined) errs.push(`index is missing for doc ${i}`);
    if (d._id === undefined || d._id === null) errs.push(`id is missing for doc ${i}`);
  });
  if (errs.length) throw validation(errs);
  const out: Json[] = [];
  for (const d of docs) {
    const ix = String(d._index ?? index);
    const id = String(d._id);
    const params: Params = { ...q };
    if (d._source !== undefined) {
      const s = sourceSpec(d._source);
      params._source = s.enabled ? undefined : 'false';
      if (s.includes.length) params._source_includes = s.includes.join(',');
      if (s.excludes.length) params._source_excludes = s.excludes.join(',');
    }
    if (d.routing !== undefined || d._routing !== undefined) params.routing = String(d.routing ?? d._routing);
    if (d.stored_fields !== undefined) params.stored_fields = Array.isArray(d.stored_fields) ? d.stored_fields.join(',') : String(d.stored_fields);
    try {
      const r = await getDoc(t, ix, id, params, 'get');
      out.push(r.body as Json);
    } catch (e) {
      if (!(e instanceof EsError)) throw e;
      out.push({ _index: ix, _type: '_doc', _id: id, error: e.errorObject() as Json });
    }
  }
  return { status: 200, body: { docs: out } };
}

/** The parameters an action line may carry. */
const BULK_KEYS = new Set(['_index', '_id', '_type', 'routing', '_routing', 'if_seq_no', 'if_primary_term', 'version', 'version_type', 'retry_on_conflict', 'require_alias', '_source', 'pipeline', 'op_type', 'dynamic_templates']);
const keysOf = (o: JsonObject): string[] => Object.keys(o);

/** _bulk: NDJSON action/source pairs; each item fails alone; the rest commit in one frame per batch. */
export async function bulk(t: EsTenant, index: string | undefined, text: string, q: Params): Promise<EsResponse> {
  const t0 = Date.now();
  const lines = text.split('\n');
  const ops: Array<{ kind: string; op?: WriteOp; error?: EsError; meta: JsonObject }> = [];
  // per request: the index each name writes to, and the parameters of an item that sets none
  const refs = new Map<string, Awaited<ReturnType<EsTenant['writeRef']>>>();
  let base: ReturnType<typeof opParams> | undefined;
  let i = 0;
  let lineNo = 0;
  while (i < lines.length) {
    const raw = lines[i++].trim();
    lineNo++;
    if (!raw) continue;
    let action: unknown;
    try { action = JSON.parse(raw); } catch { throw illegalArgument(`Malformed action/metadata line [${lineNo}], expected START_OBJECT or END_OBJECT but found [VALUE_STRING]`); }
    if (!isObj(action)) throw illegalArgument(`Malformed action/metadata line [${lineNo}], expected START_OBJECT or END_OBJECT but found [${Array.isArray(action) ? 'START_ARRAY' : 'VALUE_STRING'}]`);
    const keys = Object.keys(action);
    if (keys.length === 0) throw illegalArgument(`Malformed action/metadata line [${lineNo}], expected FIELD_NAME but found [END_OBJECT]`);
    if (keys.length !== 1) throw illegalArgument(`Malformed action/metadata line [${lineNo}], expected END_OBJECT but found [FIELD_NAME]`);
    let kind = keys[0];
    if (!['index', 'create', 'update', 'delete'].includes(kind)) throw illegalArgument(`Malformed action/metadata line [${lineNo}], expected field [create], [delete], [index] or [update] but found [${kind}]`);
    const meta = action[kind];
    if (!isObj(meta)) throw illegalArgument(`Malformed action/metadata line [${lineNo}], expected START_OBJECT or END_OBJECT but found [VALUE_STRING]`);
    for (const k of keysOf(meta)) {
      if (!BULK_KEYS.has(k)) throw illegalArgument(`Action/metadata line [${lineNo}] contains an unknown parameter [${k}]`);
    }
    let source: unknown;
    if (kind !== 'delete') {
      while (i < lines.length && !lines[i].trim()) { i++; lineNo++; }
      if (i >= lines.length) throw illegalArgument(`The bulk request must be terminated by a newline [\\n]`);
      const sl = lines[i++];
      lineNo++;
      try { source = parseJsonExact(sl); } catch { source = undefined; }
    }
    if (kind === 'index' && meta.op_type === 'create') kind = 'create';
    const ix = meta._index === undefined ? index : String(meta._index);
    const id = meta._id === undefined || meta._id === null ? undefined : String(meta._id);
    const entry: { kind: string; op?: WriteOp; error?: EsError; meta: JsonObject } = { kind, meta: { _index: ix ?? null, _id: id ?? null } };
    try {
      if (ix === undefined) throw validation(['index is missing']);
      if ((kind === 'delete' || kind === 'update') && id === undefined) throw validation(['id is missing']);
      if (id !== undefined && id === '') throw illegalArgument('if _id is specified it must not be empty');
      if (kind !== 'delete' && !isObj(source)) throw new EsError(400, 'mapper_parsing_exception', 'failed to parse', { caused_by: { type: 'not_x_content_exception', reason: 'Compressor detection can only be called on some xcontent bytes or compressed xcontent bytes' } });
      let ref = refs.get(ix);
      if (!ref) refs.set(ix, (ref = await t.writeRef(ix)));
      // the common item names only _index/_id: the request's parameters, parsed once
      const plain = keysOf(meta).every((k) => k === '_index' || k === '_id');
      const p = plain ? (base ??= opParams(q)) : opParams({ ...q, ...Object.fromEntries(Object.entries(meta).map(([k, v]) => [k, v === null ? undefined : String(v)])) } as Params);
      entry.meta = { _index: ref.meta.es_index, _id: id ?? null };
      let upd = source as JsonObject;
      const srcParam = meta._source ?? (q._source !== undefined ? q._source : undefined);
      if (kind === 'update' && upd._source === undefined && (srcParam !== undefined || q._source_includes !== undefined || q._source_excludes !== undefined)) {
        const s = sourceParams({ _source: srcParam === undefined ? undefined : typeof srcParam === 'string' ? srcParam : JSON.stringify(srcParam), _source_includes: q._source_includes, _source_excludes: q._source_excludes });
        upd = { ...upd, _source: isObj(srcParam) ? srcParam : s ? { includes: s.includes, excludes: s.excludes } : true };
      }
      entry.op = kind === 'update'
        ? { action: 'update', ref, id: id!, update: upd, ...p, version: undefined }
        : kind === 'delete' ? { action: 'delete', ref, id: id!, ...p }
        : { action: kind === 'create' || meta.op_type === 'create' || id === undefined ? 'create' : 'index', ref, id: id ?? autoId(), source: source as JsonObject, ...p };
    } catch (e) {
      if (!(e instanceof EsError)) throw e;
      entry.error = e;
    }
    ops.push(entry);
  }
  if (!ops.length) throw validation(['no requests added']);
  const runnable = ops.filter((o) => o.op).map((o) => o.op!);
  const results = await writeBatch(t.state, runnable);
  let k = 0;
  let errors = false;
  const items = ops.map((o) => {
    if (o.error) {
      errors = true;
      return { [o.kind]: { _index: o.meta._index, _type: '_doc', _id: o.meta._id, status: o.error.status, error: o.error.item() } };
    }
    const r = results[k++];
    if (r.body.error) errors = true;
    // the item's body is this request's own object: completed in place, not copied
    const body: JsonObject = r.body as JsonObject;
    if (!body.status) body.status = r.status;
    if (q.refresh === 'true' || q.refresh === '') if (!body.error) body.forced_refresh = true;
    return { [o.kind]: body };
  });
  return { status: 200, body: { took: Date.now() - t0, errors, items: items as Json } };
}
