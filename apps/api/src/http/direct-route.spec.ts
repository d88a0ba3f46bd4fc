import 'reflect-metadata';
import { CanActivate, ExecutionContext, SetMetadata } from '@nestjs/common';
import Fastify, { FastifyInstance } from 'fastify';
import { DbError } from '@mmdb/core';
import type { AppConfig } from '../config';
import { DirectRoutes } from './direct-route';
import { ErrorFilter } from './error.filter';
import { globalGuards } from './guards';

const MARK = 'test:mark';

/** A controller whose method carries metadata, as `@Requires` does on a real one. */
class Ctl {
  calls = 0;
  @SetMetadata(MARK, 'on-the-method')
  handle(req: { params: { id: string } }): unknown {
    this.calls++;
    if (req.params.id === 'boom') throw new DbError('row_not_found', 'no row boom');
    if (req.params.id === 'later') return Promise.resolve({ later: true });
    if (req.params.id === 'reject') return Promise.reject(new DbError('write_conflict', 'at 3', { current_version: 3 }));
    return { id: req.params.id };
  }
}

/** Stands in for each of the app's global guards: records the order and the metadata it saw. */
class FakeGuard implements CanActivate {
  answer: (id: string) => boolean | Promise<boolean> = () => true;
  constructor(
    readonly name: string,
    readonly log: string[],
  ) {}
  canActivate(ctx: ExecutionContext): boolean | Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<{ params: { id: string } }>();
    this.log.push(`${this.name}:${Reflect.getMetadata(MARK, ctx.getHandler())}:${ctx.getClass().name}`);
    return this.answer(req.params.id);
  }
}

describe('DirectRoutes', () => {
  let app: FastifyInstance;
  const log: string[] = [];
  const config = {} as AppConfig;
  const guards = globalGuards(config).map((g) => new FakeGuard(g.name, log));
  const ctl = new Ctl();

  beforeAll(async () => {
    app = Fastify();
    const byClass = new Map<unknown, unknown>(globalGuards(config).map((g, i) => [g, guards[i]]));
    byClass.set(ErrorFilter, new ErrorFilter());
    const refs = { get: (cls: unknown) => byClass.get(cls) };
    const direct = new DirectRoutes({ httpAdapter: { getInstance: () => app } } as never, refs as never, config);
    direct.add('GET', '/things/:id', ctl, 'handle');
    await app.ready();
  });
  afterAll(() => app.close());
  beforeEach(() => {
    log.length = 0;
    for (const g of guards) g.answer = () => true;
  });

  it('runs every global guard in order, with the method and class as a Nest route context, then sends what the method returns', async () => {
    const r = await app.inject({ method: 'GET', url: '/things/a' });
    expect([r.statusCode, r.json()]).toEqual([200, { id: 'a' }]);
    expect(log).toEqual(globalGuards(config).map((g) => `${g.name}:on-the-method:Ctl`));
    expect((await app.inject({ method: 'GET', url: '/things/later' })).json()).toEqual({ later: true });
  });

  it('a guard answering a promise: the rest of the guards and the method run after it settles', async () => {
    guards[0].answer = () => new Promise((res) => setTimeout(() => res(true), 5));
    const r = await app.inject({ method: 'GET', url: '/things/b' });
    expect([r.statusCode, r.json(), log.length]).toEqual([200, { id: 'b' }, guards.length]);
  });

  it('a guard refusing (false, a throw, a rejection) answers through the error filter and the method is not called', async () => {
    const before = ctl.calls;
    guards[1].answer = () => false;
    let r = await app.inject({ method: 'GET', url: '/things/c' });
    expect([r.statusCode, r.json().error, r.json().message]).toEqual([403, 'forbidden', 'Forbidden resource']);
    guards[1].answer = () => {
      throw new DbError('unauthorized', 'missing Authorization: Bearer header');
    };
    r = await app.inject({ method: 'GET', url: '/things/c' });
    expect([r.statusCode, r.json().error]).toEqual([401, 'unauthorized']);
    guards[1].answer = () => true;
    guards[2].answer = () => Promise.reject(new DbError('quota_exceeded', 'credit exhausted'));
    r = await app.inject({ method: 'GET', url: '/things/c' });
    expect([r.statusCode, r.json().error]).toEqual([402, 'quota_exceeded']);
    guards[2].answer = () => true;
    guards[3].answer = () => Promise.resolve(false);
    r = await app.inject({ method: 'GET', url: '/things/c' });
    expect([r.statusCode, r.json().error]).toEqual([403, 'forbidden']);
    expect(ctl.calls).toBe(before);
  });

  it('what the method throws or rejects with answers through the error filter', async () => {
    let r = await app.inject({ method: 'GET', url: '/things/boom' });
    expect([r.statusCode, r.json()]).toEqual([404, { error: 'row_not_found', message: 'no row boom', request_id: expect.any(String), retry: false }]);
    r = await app.inject({ method: 'GET', url: '/things/reject' });
    expect([r.statusCode, r.json().current_version]).toEqual([409, 3]);
  });

  it('an empty path parameter is "not found", as for a Nest route, before any guard runs', async () => {
    const r = await app.inject({ method: 'GET', url: '/things/' });
    expect(r.statusCode).toBe(404);
    expect(log).toEqual([]);
  });
});
