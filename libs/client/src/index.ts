/**
 * @mmdb/client — the TypeScript client of the mmdb HTTP API. See README.md.
 */
export { Mmdb, pkPath, type Pk, type SqlResult, type WatchEvent, type WriteOpts } from './client';
export { MmdbError, type MmdbWarning } from './errors';
export { Transport, type Answer, type AnswerHeaders, type Body, type Call, type ClientOptions } from './transport';
export { retryDelay, retryAfterMs, BACKOFF_MS, BACKOFF_CAP_MS, MAX_RETRIES, type RetryInput } from './retry';
export { parseSse, watchEvents, idAfter, type SseEvent, type WatchOptions } from './sse';
export { plan, expr, PlanBuilder, type Expr, type PlanNode } from './plan';
export { t, type Static, type TSchema, type JsonSchema } from './schema';
export * as models from './contract/models';
export { ROUTES, routeById, deprecationHeaders, type Deprecation, type RouteDef, type ParamDef, type AnswerDef, type RetryClass, type Method } from './contract/routes';
export { openApiDocument, API_VERSION, COMPATIBILITY_POLICY, type ErrorInfo, type OpenApiOptions } from './contract/openapi';
export type { TlsOptions } from './tls';
