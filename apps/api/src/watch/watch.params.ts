/** The query string and headers of GET /watch, checked before any stream opens (each problem: 400 validation_failed). */
import { DbError, type JsonValue } from '@mmdb/core';
import { validatePlan } from '@mmdb/plan';
import type { ChangeCursor } from '@mmdb/storage';
import type { WatchSource } from '@mmdb/sql';
import { parseId } from './sse';

/** A subscription as requested: an English question still to compile, or a query. */
export type WatchRequestSource = WatchSource | { readonly nl: string; readonly params?: readonly unknown[] };

export interface WatchParams {
  readonly source: WatchRequestSource;
  readonly initial: boolean;
  readonly since: ChangeCursor | null;
}

function one(q: Record<string, unknown>, name: string): string | undefined {
  const v = q[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new DbError('validation_failed', `query parameter ${name} is given more than once`, { field: name });
  return v;
}

/** `Accept` must name text/event-stream (the stream's only type). */
export function checkAccept(accept: string | undefined): void {
  const types = (accept ?? '').split(',').map((t) => t.split(';')[0].trim().toLowerCase());
  if (!types.includes('text/event-stream')) {
    throw new DbError('validation_failed', 'a watch stream needs the header Accept: text/event-stream', { field: 'accept' });
  }
}

export function parseWatchParams(q: Record<string, unknown>, lastEventId: string | undefined, epochOf: (lsn: number) => number | undefined): WatchParams {
  const nl = one(q, 'nl');
  const sql = one(q, 'sql');
  const planText = one(q, 'plan');
  const given = [nl, sql, planText].filter((x) => x !== undefined).length;
  if (given !== 1) throw new DbError('validation_failed', 'give exactly one of the query parameters nl, sql or plan', { field: 'nl' });
  let source: WatchRequestSource;
  if (nl !== undefined) {
    if (!nl.trim()) throw new DbError('validation_failed', 'nl must not be empty', { field: 'nl' });
    source = { nl };
  } else if (sql !== undefined) {
    if (!sql.trim()) throw new DbError('validation_failed', 'sql must not be empty', { field: 'sql' });
    source = { sql };
  } else {
    let json: JsonValue;
    try {
      json = JSON.parse(planText!) as JsonValue;
    } catch {
      throw new DbError('validation_failed', 'plan must be a JSON plan tree', { field: 'plan' });
    }
    source = { plan: validatePlan(json) };
  }
  const paramsText = one(q, 'params');
  if (paramsText !== undefined) {
    let params: unknown;
    try {
      params = JSON.parse(paramsText);
    } catch {
      params = undefined;
    }
    if (!Array.isArray(params)) throw new DbError('validation_failed', 'params must be a JSON array (the values of $1, $2, …)', { field: 'params' });
    if ('nl' in source) throw new DbError('validation_failed', 'params go with sql or plan (a question carries its own values)', { field: 'params' });
    source = { ...source, params };
  }
  const init = one(q, 'initial');
  if (init !== undefined && !/^(true|false|1|0)$/.test(init)) throw new DbError('validation_failed', 'initial must be true or false', { field: 'initial' });
  const sinceText = lastEventId !== undefined && lastEventId !== '' ? lastEventId : one(q, 'since');
  const since = sinceText !== undefined ? parseId(sinceText, lastEventId ? 'Last-Event-ID' : 'since', epochOf) : null;
  return { source, initial: init === 'true' || init === '1', since };
}
