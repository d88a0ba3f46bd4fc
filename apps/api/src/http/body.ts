/**
 * Request bodies: the one mechanism every route shares (apps/api/README.md, "Bodies and
 * Content-Type").
 *
 * - Parsing (fastify content-type parsers, installed by `installBodyParsers`): a JSON media
 *   type (`application/json` or any `+json` type) is parsed exactly (`parseJsonExact`: big
 *   integers stay exact); `application/x-ndjson` reaches the handler as the raw stream; any
 *   other type is read (under the body cap) and kept as a `RawBody` naming its type.
 * - Checking (`BodyTypeGuard`, a global guard): each route declares the kinds it takes with
 *   `@Accepts(...)` (JSON when it says nothing); a body of another kind is 400 `invalid_body`
 *   naming the expected type. A text route gets its RawBody as a string.
 */
import { CanActivate, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Readable } from 'stream';
import { DbError, parseJsonExact } from '@mmdb/core';

/** `raw`: the route reads any body itself (the Elasticsearch surface, whose media rules are Elasticsearch's). */
export type BodyKind = 'json' | 'ndjson' | 'text' | 'raw';

export const ACCEPTS = 'mmdb:accepts';

/** The body kinds a route takes (default: JSON only). */
export const Accepts = (...kinds: BodyKind[]) => SetMetadata(ACCEPTS, kinds);

/** A body of a media type no parser reads (form data, XML, text on a JSON route, ...). */
export class RawBody {
  constructor(
    readonly type: string,
    readonly data: Buffer,
  ) {}
}

const TEXT_TYPES = new Set(['text/plain', 'application/toml']);

/** The media type of a Content-Type header, lower-cased, without parameters ('' when absent). */
export function mediaType(header: string | string[] | undefined): string {
  const h = Array.isArray(header) ? header[0] : header;
  if (!h) return '';
  const semi = h.indexOf(';');
  return (semi < 0 ? h : h.slice(0, semi)).trim().toLowerCase();
}

export function isJsonType(t: string): boolean {
  return t === 'application/json' || (t.startsWith('application/') && t.endsWith('+json'));
}

type Done = (e: Error | null, body?: unknown) => void;

/** The Elasticsearch surface (libs/es-compat) parses as Elasticsearch does: see `esBody`. */
const ES_ROUTE = /^\/v1\/tenants\/[^/]+\/es(\/|\?|$)/;

/**
 * A body of the Elasticsearch surface: JSON types parsed exactly as every route's
 * (`parseJsonExact`: a `long` beyond ±2^53 stays exact; libs/es-compat `numbers.ts` says what
 * the surface does with them), and when the text is not one JSON document (NDJSON sent as
 * application/json) or an NDJSON compatibility type, the text itself; other types stay RawBody.
 */
function esBody(type: string, buf: Buffer): unknown {
  if (isJsonType(type) || type === 'application/vnd.elasticsearch+x-ndjson') {
    const text = buf.toString('utf8');
    try {
      return parseJsonExact(text);
    } catch {
      return text;
    }
  }
  return new RawBody(type, buf);
}

/** Stateless when not streaming: one decoder serves every request. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Replaces fastify's parsers with ours (see the file comment). */
export function installBodyParsers(fastify: {
  removeAllContentTypeParsers(): void;
  addContentTypeParser(type: string | string[] | RegExp, opts: object | ((req: unknown, body: unknown, done: Done) => void), fn?: (req: unknown, body: unknown, done: Done) => void): void;
}): void {
  fastify.removeAllContentTypeParsers();
  // NDJSON bodies reach the handler as the raw stream; the rows controller counts its bytes.
  fastify.addContentTypeParser('application/x-ndjson', (_req: unknown, payload: unknown, done: Done) => done(null, payload));
  const parse = (req: unknown, body: unknown, done: Done) => {
    const type = mediaType((req as { headers: Record<string, string | undefined> }).headers['content-type']);
    const buf = body as Buffer;
    // no body at all (a DELETE or a cancel sent with a Content-Type): the route sees none
    if (buf.length === 0) return done(null, undefined);
    if (ES_ROUTE.test((req as { url: string }).url)) return done(null, esBody(type, buf));
    if (!isJsonType(type)) return done(null, new RawBody(type, buf));
    let text: string;
    try {
      text = UTF8.decode(buf);
    } catch {
      return done(new DbError('invalid_body', 'the body is not valid UTF-8'));
    }
    try {
      done(null, parseJsonExact(text));
    } catch (e) {
      done(new DbError('invalid_body', `the body is not valid JSON: ${(e as Error).message}`));
    }
  };
  // The same parser for every type; application/json is also registered by name because
  // fastify caches the parser it finds for a Content-Type only when it is registered by type
  // (a catch-all match parses the header again on every request).
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, parse);
  fastify.addContentTypeParser('*', { parseAs: 'buffer' }, parse);
}

function expected(kinds: readonly BodyKind[]): string {
  const names = kinds.map((k) => (k === 'json' ? 'application/json (or a +json type)' : k === 'ndjson' ? 'application/x-ndjson' : 'text/plain'));
  return names.join(' or ');
}

/** Refuses a body whose kind the route does not take (400 invalid_body naming the expected type). */
@Injectable()
export class BodyTypeGuard implements CanActivate {
  /** The kinds per route handler (metadata does not change after start). */
  private readonly kinds = new WeakMap<object, BodyKind[]>();

  constructor(private readonly reflector: Reflector) {}

  canActivate(ctx: ExecutionContext): boolean {
    const req = ctx.switchToHttp().getRequest<{ body?: unknown; headers: Record<string, string | string[] | undefined> }>();
    const body = req.body;
    if (body === undefined || body === null) return true;
    const handler = ctx.getHandler();
    let kinds = this.kinds.get(handler);
    if (!kinds) this.kinds.set(handler, (kinds = this.reflector.getAllAndOverride<BodyKind[] | undefined>(ACCEPTS, [handler, ctx.getClass()]) ?? ['json']));
    if (kinds.includes('raw')) return true;
    const got = body instanceof RawBody ? body.type : body instanceof Readable ? 'application/x-ndjson' : 'application/json';
    let kind: BodyKind | undefined;
    if (body instanceof RawBody) kind = TEXT_TYPES.has(body.type) ? 'text' : undefined;
    else kind = body instanceof Readable ? 'ndjson' : 'json';
    if (!kind || !kinds.includes(kind)) {
      if (body instanceof Readable) body.resume(); // drain, so the client reads our answer
      throw new DbError('invalid_body', `this route takes Content-Type: ${expected(kinds)}; got ${got ? `"${got}"` : 'no Content-Type'}`, {
        expected: kinds.map((k) => (k === 'json' ? 'application/json' : k === 'ndjson' ? 'application/x-ndjson' : 'text/plain')),
      });
    }
    if (kind === 'text') req.body = (body as RawBody).data.toString('utf8');
    return true;
  }
}
