import { BadRequestException, HttpException, NotFoundException, PayloadTooLargeException } from '@nestjs/common';
import { DbError } from '@mmdb/core';
import { classify, ErrorFilter } from './error.filter';

function host(reply: any, req: any) {
  return { switchToHttp: () => ({ getResponse: () => reply, getRequest: () => req }) } as any;
}

function fakeReply() {
  const r: any = { headers: {} as Record<string, string>, sent: false, raw: { headersSent: false } };
  r.status = (s: number) => ((r.code = s), r);
  r.header = (k: string, v: string) => ((r.headers[k] = v), r);
  r.send = (b: unknown) => ((r.body = b), r);
  return r;
}

describe('ErrorFilter', () => {
  it('maps a DbError to its catalogue status with details merged into the body', () => {
    const reply = fakeReply();
    new ErrorFilter().catch(new DbError('write_conflict', 'row is at 3', { current_version: 3 }), host(reply, { id: 'R1', method: 'PUT', url: '/x' }));
    expect(reply.code).toBe(409);
    expect(reply.body).toEqual({ error: 'write_conflict', message: 'row is at 3', request_id: 'R1', retry: false, current_version: 3 });
    expect(reply.headers['x-db-trace-id']).toBeUndefined();
  });

  it('an unexpected error is a 500 internal_error with X-DB-Trace-Id and no internals in the body', () => {
    const reply = fakeReply();
    const filter = new ErrorFilter();
    const logged: string[] = [];
    (filter as any).log = { error: (m: string) => logged.push(m) };
    filter.catch(new TypeError('secret internals'), host(reply, { id: 'R2', method: 'GET', url: '/y' }));
    expect(reply.code).toBe(500);
    expect(reply.body).toEqual({ error: 'internal_error', message: 'internal error', request_id: 'R2', retry: true });
    const trace = reply.headers['x-db-trace-id'];
    expect(trace).toMatch(/^[0-9A-Z]{26}$/);
    expect(logged[0]).toContain(`trace=${trace}`);
    expect(logged[0]).toContain('secret internals');
  });

  it('maps HTTP-layer errors to catalogue codes', () => {
    expect(classify(new NotFoundException('Cannot GET /z')).code).toBe('not_found');
    expect(classify(new BadRequestException('Unexpected token')).code).toBe('invalid_body');
    expect(classify(new PayloadTooLargeException()).code).toBe('payload_too_large');
    expect(classify(new HttpException('Unsupported Media Type', 415)).code).toBe('invalid_body');
    expect(classify(Object.assign(new Error('no space'), { code: 'ENOSPC' })).code).toBe('service_unavailable');
    expect(classify(new HttpException('teapot', 418)).code).toBe('internal_error');
  });
});
