/**
 * Builds the OpenAPI 3.1 document from the route registry. The server passes its error
 * catalogue (code → status, retry, when) and, to describe only what it really serves, the
 * list of routes it registered.
 */
import { ErrorBody } from './models';
import { ROUTES, type RouteDef } from './routes';

export interface ErrorInfo {
  readonly status: number;
  readonly retry: boolean;
  readonly when: string;
}

export interface OpenApiOptions {
  readonly errors: Readonly<Record<string, ErrorInfo>>;
  /** Keep only these route ids (the routes the server registered). Default: all. */
  readonly only?: ReadonlySet<string>;
  readonly serverUrl?: string;
}

export const API_VERSION = '1.0.0';

export const COMPATIBILITY_POLICY = `Compatibility within 1.x: we only add — new routes, new optional request fields and query parameters, new answer fields, new error codes for new conditions. Clients must ignore answer fields they do not know. Error codes are stable (switch on \`error\`, never on \`message\`). A route, field or parameter is removed or changed incompatibly only in a new major version under a new path prefix (/v2/). Deprecation: a deprecated route answers every call with a \`Deprecation\` header (RFC 9745, the date it was deprecated) and a \`Sunset\` header (RFC 8594, the date it may go), is marked \`deprecated: true\` in this document with the replacement named in its description, and is noted in the changelog; it keeps working for at least 12 months after the announcement.`;

const COMMON: Record<RouteDef['auth'], string[]> = {
  public: ['internal_error'],
  tenant: ['unauthorized', 'forbidden', 'not_found', 'rate_limited', 'internal_error', 'service_unavailable'],
  operator: ['unauthorized', 'forbidden', 'not_found', 'internal_error', 'service_unavailable'],
};

function errorAnswers(route: RouteDef, errors: OpenApiOptions['errors']): Record<string, unknown> {
  const byStatus = new Map<number, string[]>();
  for (const code of new Set([...COMMON[route.auth], ...route.errors])) {
    const e = errors[code];
    if (!e) throw new Error(`route ${route.id} names unknown error code ${code}`);
    byStatus.set(e.status, [...(byStatus.get(e.status) ?? []), code]);
  }
  const out: Record<string, unknown> = {};
  for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    if (route.answers.some((a) => a.status === status)) continue;
    out[String(status)] = {
      description: codes.map((c) => `\`${c}\`: ${errors[c].when}`).join(' '),
      ...(status === 429 ? { headers: { 'Retry-After': { schema: { type: 'integer' }, description: 'seconds to wait' } } } : {}),
      content: { 'application/json': { schema: { allOf: [{ $ref: '#/components/schemas/Error' }, { properties: { error: { enum: codes } } }] } } },
    };
  }
  return out;
}

function operation(route: RouteDef, opts: OpenApiOptions): Record<string, unknown> {
  const responses: Record<string, unknown> = {};
  for (const a of route.answers) {
    const headers = route.method !== 'GET' ? { 'X-DB-Replication': { schema: { const: 'degraded' }, description: 'on a write: committed, but follower acknowledgements did not arrive in time (spec 7.2)' } } : undefined;
    responses[String(a.status)] = {
      description: a.description,
      ...(headers ? { headers } : {}),
      ...(a.schema ? { content: { [a.contentType ?? 'application/json']: { schema: a.schema.json } } } : {}),
    };
  }
  Object.assign(responses, errorAnswers(route, opts.errors));
  const dep = route.deprecated;
  return {
    operationId: route.id,
    summary: route.summary,
    ...(dep ? { deprecated: true, 'x-mmdb-deprecation': dep } : {}),
    tags: [route.tag],
    ...(dep ? { description: `Deprecated since ${dep.since}: use ${dep.replacement}. Answers carry Deprecation and Sunset headers; it works until ${dep.sunset}.` } : {}),
    ...(route.passthrough ? { description: 'A pass-through prefix: every ES 7.x route (GET, HEAD, PUT, POST, DELETE) under it is answered with the ES 7.x protocol\'s bodies and error shapes; not described here route by route.', 'x-mmdb-passthrough': true } : {}),
    'x-mmdb-retry': route.retry,
    security: route.auth === 'public' ? [] : [{ bearer: [] }],
    parameters: (route.params ?? []).map((p) => ({ name: p.name, in: p.in, required: p.in === 'path' ? true : !!p.required, ...(p.description ? { description: p.description } : {}), schema: p.schema.json })),
    ...(route.body
      ? { requestBody: { required: route.body.some((b) => b.required), content: Object.fromEntries(route.body.map((b) => [b.contentType, { schema: b.schema.json }])) } }
      : {}),
    responses,
  };
}

/** The OpenAPI 3.1 document of the routes (see OpenApiOptions). */
export function openApiDocument(opts: OpenApiOptions): Record<string, any> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of ROUTES) {
    if (opts.only && !opts.only.has(r.id)) continue;
    // a pass-through prefix takes every method of the protocol behind it
    const methods = r.passthrough ? ['GET', 'HEAD', 'PUT', 'POST', 'DELETE'] : [r.method];
    for (const m of methods) {
      const op = operation(r, opts);
      (paths[r.path] ??= {})[m.toLowerCase()] = r.passthrough ? { ...op, operationId: `${r.id}.${m.toLowerCase()}` } : op;
    }
  }
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'mmdb',
      version: API_VERSION,
      description: `The mmdb HTTP API (spec: API.md). Every non-2xx answer is an Error body; retry rules: spec 7.3 (x-mmdb-retry on each operation: safe, keyed = retried only with an Idempotency-Key, never).\n\n${COMPATIBILITY_POLICY}`,
      'x-compatibility-policy': COMPATIBILITY_POLICY,
    },
    ...(opts.serverUrl ? { servers: [{ url: opts.serverUrl }] } : {}),
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'a tenant token, or the operator token' } },
      schemas: { Error: ErrorBody.json },
    },
    paths,
  };
}
