import * as crypto from 'crypto';
import type { Readable } from 'stream';
import { Inject, Injectable } from '@nestjs/common';
import { DbError, isDbError, JsonValue, quoteValue, Row, stringifyJson, TableManifest } from '@mmdb/core';
import type { ChangeResult, CommitResult, IdempotencyRecordStored, Precondition, RowPutChange, StoredResponse } from '@mmdb/storage';
import { APP_CONFIG, AppConfig } from '../config';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { etag } from './if-match';
import { fingerprint, idempotencyFor, idempotencyKeyOf } from './idempotency';
import { readNdjson } from './ndjson';
import { mergePatchRow } from './merge-patch';
import { formatPk } from './pk';

export interface ReqLike {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
}

/** What a handler returns: a fresh answer, or a stored one replayed for an Idempotency-Key. */
export interface Answer {
  readonly status: number;
  readonly body: JsonValue;
  /** The body already serialized as JSON text (sent as is instead of `body`). */
  readonly json?: string;
  readonly headers: Record<string, string>;
  readonly replayed?: boolean;
}

function fromStored(s: StoredResponse): Answer {
  return { status: s.status, body: s.body, headers: { ...(s.headers ?? {}) }, replayed: true };
}

function putAnswer(r: ChangeResult): StoredResponse {
  if (r.op !== 'put') throw new DbError('internal_error', `unexpected commit result ${r.op}`);
  return { status: 200, body: { schema: r.schema, pk: formatPk(r.pk), version: r.version, created: r.created }, headers: { etag: etag(r.version) } };
}

/** The rows API (spec §4.3) on top of `TenantStore.commit` and snapshot reads. */
@Injectable()
export class RowsService {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  manifest(t: TenantHandle, schema: string): TableManifest {
    const m = t.store.table(schema);
    if (!m) throw new DbError('schema_not_found', `no schema is registered as "${schema}"`, { schema });
    return m;
  }

  private async commitOne(t: TenantHandle, req: ReqLike, changes: RowPutChange[] | any[], render: (r: readonly ChangeResult[]) => StoredResponse): Promise<Answer> {
    const idempotency = idempotencyFor(req, this.config.idempotencyTtlMs, render);
    const res: CommitResult = await t.commit({ changes, idempotency });
    if (res.replayed) return fromStored(res.replayed);
    // render builds a fresh answer: its headers need no copy
    const s = render(res.results);
    return { status: s.status, body: s.body, headers: s.headers ?? {} };
  }

  /** POST rows/{schema}: upsert (or insert-only with expect=insert). */
  upsert(t: TenantHandle, req: ReqLike, schema: string, row: unknown, expect?: string): Promise<Answer> {
    this.manifest(t, schema);
    const pre = this.expectPre(expect);
    const r = asRow(row);
    return this.commitOne(t, req, [{ op: 'put', schema, row: r, ...(pre ? { precondition: pre } : {}) }], (res) => putAnswer(res[0]));
  }

  /** PUT rows/{schema}/{pk}: the body's key must agree with the path's. */
  put(t: TenantHandle, req: ReqLike, schema: string, pk: JsonValue[], body: unknown, pre?: Precondition): Promise<Answer> {
    const m = this.manifest(t, schema);
    const given = asRow(body);
    // the path's key first (the usual body leaves it out): one object literal, not a copy grown by a property
    const row: Row = m.primary_key.length === 1 && given[m.primary_key[0]] === undefined ? { [m.primary_key[0]]: pk[0], ...given } : { ...given };
    m.primary_key.forEach((col, i) => {
      if (row[col] === undefined) row[col] = pk[i];
      else if (stringifyJson(normalizeKeyValue(row[col])) !== stringifyJson(pk[i])) {
        throw new DbError('validation_failed', `body primary key column "${col}" (${quoteValue(row[col])}) disagrees with the path (${quoteValue(pk[i])})`, {
          field: col,
        });
      }
    });
    return this.commitOne(t, req, [{ op: 'put', schema, row, ...(pre ? { precondition: pre } : {}) }], (res) => putAnswer(res[0]));
  }

  /**
   * PATCH rows/{schema}/{pk}: a JSON merge patch (RFC 7396, see merge-patch.ts) of the stored
   * row. The row must exist (404 row_not_found; 412 with If-Match). The patched row is written
   * only if the row is still at the version read (If-Match's version when given, else the one
   * read; a concurrent write in between is retried, up to 5 times, when no If-Match was sent).
   */
  /** `check`: the acting user's WITH CHECK, run on the merged row before it commits (security/row-gate.ts). */
  async patch(t: TenantHandle, req: ReqLike, schema: string, pk: JsonValue[], body: unknown, pre?: Precondition, check?: (rows: readonly Row[]) => Promise<void>): Promise<Answer> {
    const m = this.manifest(t, schema);
    const patch = asRow(body, 'a JSON merge patch object (RFC 7396)');
    const key = idempotencyKeyOf(req.headers);
    const stored = key ? await lookupIdempotency(t, key) : undefined;
    if (stored) {
      // a key already used: replay, or refuse another request (nothing is read or written)
      const mine = idempotencyFor(req, this.config.idempotencyTtlMs, (res) => putAnswer(res[0]))!;
      if (stored.fingerprint !== mine.fingerprint) throw new DbError('conflict', `Idempotency-Key "${key}" was already used with a different request`);
      return fromStored(stored.response);
    }
    m.primary_key.forEach((col, i) => {
      if (patch[col] !== undefined && stringifyJson(patch[col]) !== stringifyJson(pk[i])) {
        throw new DbError('validation_failed', `the patch changes primary key column "${col}" (${quoteValue(patch[col])}; the path says ${quoteValue(pk[i])})`, { field: col });
      }
    });
    for (let attempt = 0; ; attempt++) {
      const cur = await t.store.getRow(schema, pk);
      if (!cur) {
        if (pre) throw new DbError('precondition_failed', `If-Match given but row ${formatPk(pk)} does not exist in ${schema}`);
        throw new DbError('row_not_found', `no row ${formatPk(pk)} in ${schema}`, { schema, pk: formatPk(pk) });
      }
      if (pre && pre.kind === 'if_match' && pre.version !== '*' && pre.version !== cur.version) {
        throw new DbError('write_conflict', `row ${formatPk(pk)} is at version ${cur.version}, not ${pre.version}`, { current_version: cur.version });
      }
      const row = mergePatchRow(m, cur.values, patch);
      if (check) await check([row]);
      try {
        return await this.commitOne(t, req, [{ op: 'put', schema, row, precondition: { kind: 'if_match', version: cur.version } }], (res) => putAnswer(res[0]));
      } catch (e) {
        // another write landed between our read and our commit: read again (only when the
        // client did not pin a version itself)
        if (!isDbError(e) || (e.code !== 'write_conflict' && e.code !== 'precondition_failed') || (pre?.kind === 'if_match' && pre.version !== '*') || attempt >= 4) throw e;
      }
    }
  }

  /** DELETE rows/{schema}/{pk}: idempotent `{deleted}`. */
  delete(t: TenantHandle, req: ReqLike, schema: string, pk: JsonValue[], pre?: Precondition): Promise<Answer> {
    this.manifest(t, schema);
    return this.commitOne(t, req, [{ op: 'delete', schema, pk, ...(pre ? { precondition: pre } : {}) }], (res) => {
      const r = res[0];
      return { status: 200, body: { deleted: r.op === 'delete' && r.deleted } };
    });
  }

  /** GET rows/{schema}/{pk}: the row's values, with its version as ETag. */
  async get(t: TenantHandle, schema: string, pk: JsonValue[]): Promise<Answer> {
    this.manifest(t, schema);
    // The values go out as the JSON text they are stored as: no parse, no re-serialization.
    const row = await t.store.getRowJson(schema, pk);
    if (!row) throw new DbError('row_not_found', `no row ${formatPk(pk)} in ${schema}`, { schema, pk: formatPk(pk) });
    return { status: 200, body: null, json: row.json, headers: { etag: etag(row.version) } };
  }

  /** `_batch` with a JSON array: all rows in one frame, all or nothing; a bad row is named by its index. */
  async batch(t: TenantHandle, req: ReqLike, schema: string, body: unknown, expect?: string): Promise<Answer> {
    this.manifest(t, schema);
    if (!Array.isArray(body)) throw new DbError('validation_failed', '_batch expects a JSON array of row objects (or NDJSON with Content-Type: application/x-ndjson)');
    const pre = this.expectPre(expect);
    const changes = body.map((r, i) => {
      if (!isObject(r)) throw new DbError('validation_failed', `row ${i} is not a JSON object`, { index: i });
      return { op: 'put' as const, schema, row: r as Row, ...(pre ? { precondition: pre } : {}) };
    });
    const render = (res: readonly ChangeResult[]): StoredResponse => ({
      status: 200,
      body: {
        schema,
        count: res.length,
        created: res.filter((r) => r.op === 'put' && r.created).length,
        results: res.map((r) => (r.op === 'put' ? { pk: formatPk(r.pk), version: r.version, created: r.created } : null)),
      },
    });
    try {
      return await this.commitOne(t, req, changes, render);
    } catch (e) {
      // The store names the failing change by index when there are several; say it for one too.
      if (isDbError(e) && changes.length === 1 && e.details.index === undefined) throw new DbError(e.code, e.message, { ...e.details, index: 0 });
      throw e;
    }
  }

  /**
   * `_batch` with NDJSON: rows are committed `chunk` at a time, each chunk one frame. A bad line
   * fails its whole chunk (nothing of it is kept); earlier chunks stay committed, later lines are
   * not applied. With an Idempotency-Key the record rides in the last chunk's frame.
   */
  /** `check`: the acting user's WITH CHECK, run on each chunk's rows before it commits (a failing row fails its chunk, as a bad line does). */
  async ndjson(t: TenantHandle, req: ReqLike, schema: string, stream: Readable, chunkParam?: string, expect?: string, check?: (rows: readonly Row[], first?: number) => Promise<void>): Promise<Answer> {
    this.manifest(t, schema);
    const chunkSize = parseChunk(chunkParam);
    const pre = this.expectPre(expect);
    const key = idempotencyKeyOf(req.headers);
    const hash = crypto.createHash('sha256');
    const limits = { lineMax: this.config.ndjsonLineMax, streamMax: this.config.ndjsonStreamMax };
    const render = (committed: number, chunks: number): StoredResponse => ({ status: 200, body: { schema, committed, chunks } });

    if (key) {
      // A key already used: hash the whole body, then replay or refuse. Nothing is written.
      const stored = await lookupIdempotency(t, key);
      if (stored) {
        await readNdjson(stream, { lineMax: Number.MAX_SAFE_INTEGER, streamMax: limits.streamMax }, () => undefined, (c) => hash.update(c));
        if (stored.fingerprint !== fingerprint(req.method, req.url, hash.digest('hex'))) {
          throw new DbError('conflict', `Idempotency-Key "${key}" was already used with a different request`);
        }
        return fromStored(stored.response);
      }
    }

    type Chunk = { rows: Row[]; lines: number[] };
    let current: Chunk = { rows: [], lines: [] };
    let held: Chunk | null = null; // a full chunk waits until we know whether it is the last one
    let inflight: Promise<void> | null = null;
    let committed = 0;
    let chunks = 0;
    const commitChunk = async (c: Chunk, last: boolean) => {
      const changes: RowPutChange[] = pre ? c.rows.map((row) => ({ op: 'put', schema, row, precondition: pre })) : c.rows.map((row) => ({ op: 'put', schema, row }));
      const idempotency =
        last && key
          ? { key, fingerprint: fingerprint(req.method, req.url, hash.digest('hex')), expiresAt: Date.now() + this.config.idempotencyTtlMs, render: () => render(committed + c.rows.length, chunks + (c.rows.length ? 1 : 0)) }
          : undefined;
      try {
        if (check && c.rows.length) await check(c.rows); // details.index: the row in this chunk (its line below)
        await t.commit({ changes, idempotency });
      } catch (e) {
        throw chunkError(e, c, committed);
      }
      committed += c.rows.length;
      if (c.rows.length) chunks++;
    };
    const launch = async (c: Chunk) => {
      if (inflight) await inflight;
      const p = commitChunk(c, false);
      inflight = p;
      p.catch(() => undefined);
    };
    const add = (value: Row, line: number) => {
      current.rows.push(value);
      current.lines.push(line);
      if (current.rows.length >= chunkSize) {
        held = current;
        current = { rows: [], lines: [] };
      }
    };
    try {
      await readNdjson(
        stream,
        limits,
        ({ line, value }) => {
          if (!isObject(value)) throw new DbError('validation_failed', `line ${line} is not a JSON object`, { line });
          // Synchronous for every line but the first after a full chunk (no promise per row).
          if (!held) return add(value as Row, line);
          const full = held;
          held = null;
          return launch(full).then(() => add(value as Row, line));
        },
        key ? (c) => hash.update(c) : undefined,
      );
    } catch (e) {
      // An earlier chunk's failure comes first; else a full chunk read before the bad line is
      // still committed (as it would have been without holding it back), then we report.
      if (inflight) await inflight;
      if (isDbError(e) && e.details.committed === undefined && held) await commitChunk(held, false);
      throw withProgress(e, committed, current.lines);
    }
    if (inflight) await inflight;
    const rest = [held, current].filter((c): c is Chunk => !!c && c.rows.length > 0);
    if (rest.length === 0 && key) rest.push({ rows: [], lines: [] }); // records the key alone
    for (let i = 0; i < rest.length; i++) await commitChunk(rest[i], i === rest.length - 1);
    return answer(render(committed, chunks));
  }

  private expectPre(expect?: string): Precondition | undefined {
    if (expect === undefined || expect === '') return undefined;
    if (expect === 'insert') return { kind: 'insert' };
    throw new DbError('validation_failed', 'query "expect" may only be "insert"');
  }
}

function answer(s: StoredResponse): Answer {
  return { status: s.status, body: s.body, headers: { ...(s.headers ?? {}) } };
}

/** The stored Idempotency-Key record, if one is live. */
function lookupIdempotency(t: TenantHandle, key: string): Promise<IdempotencyRecordStored | undefined> {
  return t.store.idempotencyRecord(key);
}

function chunkError(e: unknown, c: { lines: number[] }, committed: number): unknown {
  if (!isDbError(e)) return e;
  const idx = typeof e.details.index === 'number' ? e.details.index : c.lines.length === 1 ? 0 : undefined;
  const line = idx !== undefined ? c.lines[idx] : undefined;
  const { index: _i, ...rest } = e.details as Record<string, unknown>;
  return new DbError(e.code, line !== undefined ? `line ${line}: ${e.message}` : e.message, {
    ...rest,
    ...(line !== undefined ? { line } : {}),
    committed,
    chunk_discarded: { first_line: c.lines[0], last_line: c.lines[c.lines.length - 1] },
  });
}

/**
 * A failure while reading (a bad line, a stream over its cap): the chunk being gathered is
 * discarded, from its first line through the failing line (or the last line read).
 */
function withProgress(e: unknown, committed: number, chunkLines: readonly number[]): unknown {
  if (!isDbError(e) || e.details.committed !== undefined) return e;
  const at = e.details.line as number | undefined;
  const first = chunkLines[0] ?? at;
  const last = at ?? chunkLines[chunkLines.length - 1];
  const discarded = first !== undefined ? { chunk_discarded: { first_line: first, last_line: last ?? first } } : {};
  return new DbError(e.code, e.message, { ...e.details, committed, ...discarded });
}

function parseChunk(raw?: string): number {
  if (raw === undefined || raw === '') return 1000;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 10000) throw new DbError('validation_failed', 'query "chunk" must be an integer from 1 to 10000');
  return Number(raw);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function asRow(v: unknown, what = 'a JSON object (a row)'): Row {
  if (!isObject(v)) throw new DbError('validation_failed', `the body must be ${what}`);
  return v as Row;
}

/** Body key values compare in stored form (a timestamp string becomes epoch ms by the store; compare as given otherwise). */
function normalizeKeyValue(v: JsonValue): JsonValue {
  return v;
}
