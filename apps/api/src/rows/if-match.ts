import { DbError } from '@mmdb/core';
import type { Precondition } from '@mmdb/storage';

/** If-Match (spec §3.2): a bare version number, a quoted entity-tag (`"3"`, `W/"3"`), or `*`. */
export function parseIfMatch(header: string | undefined): Precondition | undefined {
  if (header === undefined) return undefined;
  const h = header.trim();
  if (h === '*') return { kind: 'if_match', version: '*' };
  const m = /^(?:W\/)?"(\d+)"$/.exec(h) ?? /^(\d+)$/.exec(h);
  if (!m || !Number.isSafeInteger(Number(m[1]))) {
    throw new DbError('validation_failed', 'If-Match must be a version number, a quoted entity-tag like "3", or *');
  }
  return { kind: 'if_match', version: Number(m[1]) };
}

export function etag(version: number): string {
  return `"${version}"`;
}
