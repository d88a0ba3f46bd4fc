import { DbError } from '@mmdb/core';
import type { FramesQuery } from '@mmdb/replication';

const NODE_RE = /^[A-Za-z0-9._-]{1,64}$/;
const KNOWN_FRAMES = ['tenant', 'since_segment', 'epoch', 'after_lsn', 'follow', 'follower'];

function whole(name: string, raw: string | undefined, required: boolean): number | undefined {
  if (raw === undefined || raw === '') {
    if (required) throw new DbError('validation_failed', `query "${name}" is required (a non-negative integer)`);
    return undefined;
  }
  if (!/^\d{1,15}$/.test(raw)) throw new DbError('validation_failed', `query "${name}" must be a non-negative integer, got "${raw}"`);
  return Number(raw);
}

/** `GET /v1/replication/frames` query: since_segment (required), epoch, after_lsn, follow, follower. */
export function parseFramesQuery(q: Record<string, string | undefined>): FramesQuery {
  for (const k of Object.keys(q)) {
    if (!KNOWN_FRAMES.includes(k)) throw new DbError('validation_failed', `unknown query parameter "${k}" (allowed: ${KNOWN_FRAMES.join(', ')})`);
  }
  const follow = q.follow;
  if (follow !== undefined && !/^(1|0|true|false)$/.test(follow)) throw new DbError('validation_failed', 'query "follow" must be true or false');
  const follower = q.follower;
  if (follower !== undefined && !NODE_RE.test(follower)) throw new DbError('validation_failed', 'query "follower" must be a node name of [A-Za-z0-9._-]');
  return {
    sinceSegment: whole('since_segment', q.since_segment, true)!,
    epoch: whole('epoch', q.epoch, false),
    afterLsn: whole('after_lsn', q.after_lsn, false),
    follow: follow === '1' || follow === 'true',
    ...(follower ? { follower } : {}),
  };
}

function object(body: unknown): Record<string, unknown> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new DbError('validation_failed', 'the body must be a JSON object');
  return body as Record<string, unknown>;
}

function count(name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new DbError('validation_failed', `"${name}" must be a non-negative integer`, { field: name });
  return v;
}

/** `POST /v1/replication/ack` body `{follower, lsn, epoch}`. */
export function parseAck(body: unknown): { follower: string; lsn: number; epoch: number } {
  const b = object(body);
  if (typeof b.follower !== 'string' || !NODE_RE.test(b.follower)) throw new DbError('validation_failed', '"follower" must be a node name of [A-Za-z0-9._-]', { field: 'follower' });
  return { follower: b.follower, lsn: count('lsn', b.lsn), epoch: count('epoch', b.epoch ?? 0) };
}

/** Longest line of an acknowledgement stream (an acknowledgement is well under 200 bytes). */
const MAX_ACK_LINE = 1024;

/**
 * The lines of an `application/x-ndjson` acknowledgement stream, parsed as JSON as they arrive
 * (blank lines skipped). A line over 1 KiB or not JSON ends it with 400 validation_failed.
 */
export async function* ackLines(body: AsyncIterable<Buffer | string>): AsyncIterable<unknown> {
  let buf = '';
  const parse = (line: string): unknown => {
    try {
      return JSON.parse(line);
    } catch {
      throw new DbError('validation_failed', `an acknowledgement line is not JSON: ${line.slice(0, 80)}`);
    }
  };
  for await (const chunk of body) {
    buf += chunk.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line) yield parse(line);
    }
    if (buf.length > MAX_ACK_LINE) throw new DbError('validation_failed', `an acknowledgement line is longer than ${MAX_ACK_LINE} bytes`);
  }
  if (buf.trim()) yield parse(buf.trim());
}

/** `POST /v1/replication/hand-over` body `{node}`. */
export function parseHandOver(body: unknown): { node: string } {
  const b = object(body);
  if (typeof b.node !== 'string' || !NODE_RE.test(b.node)) throw new DbError('validation_failed', '"node" must be a node name of [A-Za-z0-9._-]', { field: 'node' });
  return { node: b.node };
}
