import { openApiDocument } from '@mmdb/client';
import { ERROR_CATALOGUE } from '@mmdb/core';
import Fastify from 'fastify';
import Ajv2020 from 'ajv/dist/2020';
import { addDeprecationHook, documentedBy, isOwnRoute, shape } from './route-table';

describe('route table ↔ registry', () => {
  it('matches fastify routes to registry entries whatever the parameter names', () => {
    expect(shape('/v1/tenants/:tenant/schemas/:id')).toBe(shape('/v1/tenants/{tenant}/schemas/{name}'));
    expect(documentedBy({ method: 'GET', url: '/v1/tenants/:tenant/rows/:schema/:pk' })?.id).toBe('rows.get');
    expect(documentedBy({ method: 'POST', url: '/v1/tenants/:tenant/rows/:schema/_batch' })?.id).toBe('rows.batch');
    expect(documentedBy({ method: 'POST', url: '/v1/tenants/:tenant/rows/:schema/:pk' })).toBeUndefined();
    expect(documentedBy({ method: 'GET', url: '/v1/tenants/:tenant/nothing' })).toBeUndefined();
  });

  it('covers every route under the ES prefix by the pass-through entry', () => {
    for (const url of ['/v1/tenants/:tenant/es', '/v1/tenants/:tenant/es/:index/_search', '/v1/tenants/:tenant/es/*']) {
      expect(documentedBy({ method: 'HEAD', url })?.id).toBe('es');
    }
  });

  it('leaves out fastify HEAD twins of GET routes', () => {
    const all = [
      { method: 'GET', url: '/health' },
      { method: 'HEAD', url: '/health' },
    ];
    expect(all.filter((r) => isOwnRoute(r, all))).toEqual([{ method: 'GET', url: '/health' }]);
  });

  it('every error code a route names is in the catalogue, every operation has an id and answers', () => {
    const doc = openApiDocument({ errors: ERROR_CATALOGUE });
    const ids = new Set<string>();
    for (const [p, ops] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [m, o] of Object.entries<any>(ops)) {
        expect(ids.has(o.operationId)).toBe(false);
        ids.add(o.operationId);
        expect(Object.keys(o.responses).length).toBeGreaterThan(0);
        for (const prm of o.parameters) if (prm.in === 'path') expect(p).toContain(`{${prm.name}}`);
        expect(['get', 'post', 'put', 'patch', 'delete', 'head']).toContain(m);
      }
    }
    expect(doc.info.version).toBe('1.0.0');
    expect(doc.info['x-compatibility-policy']).toMatch(/Deprecation/);
  });

  it('a deprecated route answers with Deprecation and Sunset headers; others get no hook', async () => {
    const app = Fastify();
    const def = { ...documentedBy({ method: 'GET', url: '/health' })!, deprecated: { since: '2026-01-01', sunset: '2027-01-01', replacement: 'GET /ready' } };
    app.addHook('onRoute', (r: any) => addDeprecationHook(r, r.url === '/old' ? def : documentedBy({ method: r.method, url: r.url })));
    app.get('/old', async () => ({ ok: true }));
    app.get('/health', async () => ({ ok: true }));
    const old = await app.inject({ method: 'GET', url: '/old' });
    expect(old.headers).toMatchObject({ deprecation: '@1767225600', sunset: 'Fri, 01 Jan 2027 00:00:00 GMT' });
    const now = await app.inject({ method: 'GET', url: '/health' });
    expect(now.headers.deprecation).toBeUndefined();
    await app.close();
  });

  it('every schema in the document is valid JSON Schema 2020-12 and every $ref resolves', () => {
    const doc = openApiDocument({ errors: ERROR_CATALOGUE });
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema(doc, 'doc');
    const esc = (x: string) => x.replace(/~/g, '~0').replace(/\//g, '~1');
    let n = 0;
    for (const [p, ops] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [m, o] of Object.entries<any>(ops)) {
        const base = `doc#/paths/${esc(p)}/${m}`;
        const refs = [
          ...o.parameters.map((_: unknown, i: number) => `${base}/parameters/${i}/schema`),
          ...Object.keys(o.requestBody?.content ?? {}).map((ct) => `${base}/requestBody/content/${esc(ct)}/schema`),
          ...Object.entries<any>(o.responses).flatMap(([st, r]) => Object.keys(r.content ?? {}).map((ct) => `${base}/responses/${st}/content/${esc(ct)}/schema`)),
        ];
        for (const $ref of refs) {
          ajv.compile({ $ref });
          n++;
        }
      }
    }
    expect(n).toBeGreaterThan(300);
  });
});
