/**
 * @mmdb/es-compat: the Elasticsearch 7.x REST surface (request/response translation, mappings,
 * Query DSL, aggregations, suggesters, ES error bodies). No HTTP framework code: the app's
 * `es` controller hands each request to `EsService.handle`.
 *
 * @example
 *   const es = new EsService(backend, tenant);
 *   const r = await es.handle({ method: 'GET', path: '/', query: {}, body: undefined });
 *   // r.status 200, r.body.version.number '7.14.2', r.headers['x-elastic-product'] 'Elasticsearch'
 */
export { EsService, ES_VERSION } from './service';
export type { EsBackend, EsChange, EsExpect, EsTable } from './port';
export type { EsRequest, EsResponse, Params } from './types';
export { EsError } from './errors';
export { serialize } from './serialize';
export { esRowFor } from './reshape';
