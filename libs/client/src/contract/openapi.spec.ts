import { deprecationHeaders } from './routes';
import { openApiDocument } from './openapi';

const ERRORS = { unauthorized: { status: 401, retry: false, when: 'x' } };

describe('deprecation', () => {
  it('gives RFC 9745 Deprecation and RFC 8594 Sunset headers', () => {
    expect(deprecationHeaders({ since: '2026-01-01', sunset: '2027-01-01', replacement: 'x' })).toEqual({ deprecation: '@1767225600', sunset: 'Fri, 01 Jan 2027 00:00:00 GMT' });
  });
  it('refuses a deprecation shorter than 12 months or bad dates', () => {
    expect(() => deprecationHeaders({ since: '2026-01-01', sunset: '2026-06-01', replacement: 'x' })).toThrow(/12 months/);
    expect(() => deprecationHeaders({ since: 'soon', sunset: '2027-06-01', replacement: 'x' })).toThrow(/bad deprecation/);
  });
  it('the document states the policy; no route is deprecated in 1.0.0', () => {
    const doc = openApiDocument({ errors: new Proxy(ERRORS, { get: (t, k: string) => (t as any)[k] ?? { status: 400, retry: false, when: k } }) });
    expect(doc.info.description).toContain('Deprecation');
    const ops = Object.values<Record<string, any>>(doc.paths).flatMap((p) => Object.values(p));
    expect(ops.filter((o) => o.deprecated)).toEqual([]);
  });
});

describe('the ES pass-through prefix', () => {
  it('is described once per method, only when the server serves it', () => {
    const errors = new Proxy({}, { get: (_t, k: string) => ({ status: 400, retry: false, when: k }) });
    const all = openApiDocument({ errors });
    expect(Object.keys(all.paths['/v1/tenants/{tenant}/es/{path}'])).toEqual(['get', 'head', 'put', 'post', 'delete']);
    expect(all.paths['/v1/tenants/{tenant}/es/{path}'].get['x-mmdb-passthrough']).toBe(true);
    const some = openApiDocument({ errors, only: new Set(['health']) });
    expect(Object.keys(some.paths)).toEqual(['/health']);
  });
});
