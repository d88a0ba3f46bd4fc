/**
 * The routes fastify registers, collected by an onRoute hook added before Nest registers its
 * controllers, matched against the route registry of @mmdb/client (the one source of the
 * OpenAPI document and the client's types).
 */
import { deprecationHeaders, ROUTES, type RouteDef } from '@mmdb/client';

export interface Registered {
  readonly method: string;
  readonly url: string;
}

/** `/v1/tenants/:tenant/rows/:schema` and `/v1/tenants/{tenant}/rows/{schema}` → `/v1/tenants/:/rows/:`. */
export function shape(path: string): string {
  return path.replace(/\{[^}]+\}/g, ':').replace(/:[A-Za-z0-9_]+/g, ':').replace(/\/+$/, '') || '/';
}

const PASSTHROUGH = ROUTES.filter((r) => r.passthrough).map((r) => ({ route: r, prefix: shape(r.path).replace(/\/:$/, '/') }));

/** The registry entry documenting a registered route, if any. */
export function documentedBy(r: Registered): RouteDef | undefined {
  const s = shape(r.url);
  const exact = ROUTES.find((d) => !d.passthrough && d.method === r.method && shape(d.path) === s);
  if (exact) return exact;
  return PASSTHROUGH.find((p) => s.startsWith(p.prefix) || s === p.prefix.slice(0, -1))?.route;
}

/** Fastify adds a HEAD twin to each GET route; those and the OPTIONS of CORS are not routes of ours. */
export function isOwnRoute(r: Registered, all: readonly Registered[]): boolean {
  if (r.method === 'HEAD' && all.some((o) => o.method === 'GET' && o.url === r.url)) return false;
  return r.method !== 'OPTIONS';
}

type Hook = (req: unknown, reply: { headers(h: Record<string, string>): unknown }, done: () => void) => void;

/**
 * For a deprecated route, adds a route-level onRequest hook that puts `Deprecation` and
 * `Sunset` on every answer (errors included). Other routes get no hook: nothing on the fast path.
 */
export function addDeprecationHook(route: { onRequest?: Hook | Hook[] }, def: RouteDef | undefined): void {
  if (!def?.deprecated) return;
  const headers = deprecationHeaders(def.deprecated);
  const hook: Hook = (_req, reply, done) => {
    reply.headers(headers);
    done();
  };
  route.onRequest = route.onRequest ? [...(Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest]), hook] : [hook];
}
