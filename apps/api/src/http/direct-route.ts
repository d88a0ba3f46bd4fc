/**
 * Direct routes: a controller method fastify calls itself, without Nest's router, for the few
 * hot routes where Nest's per-request machinery is a measurable share of the request's CPU
 * (the durable row PUT: apps/api/DESIGN.md, "Direct routes"; tools/bench/http/README.md).
 *
 * What Nest does for a route, done here the same way and with the same parts:
 * - an empty path parameter is "not found" (as the fastify adapter's `requireNonEmptyParams`);
 * - the app's global guards (the same instances, in the order of guards.ts) get an
 *   `ExecutionContextHost` naming the controller class and method, so `@Requires`, `@Accepts`,
 *   `@Public` and the other metadata are read off the method as Nest's context gives them;
 *   a guard answering false is 403 with Nest's `Forbidden resource`;
 * - the method is called with `(req, reply)` (a direct route's method takes exactly those, as a
 *   Nest route taking `@Req()` and `@Res({ passthrough: true })`), and what it returns is sent
 *   with `reply.send` (the reply serializer of server.ts writes it, as for every route);
 * - anything thrown goes to the app's one exception filter (ErrorFilter), as Nest's router does.
 * What is left out: Nest's parameter resolution (an async step per decorated parameter), the
 * async wrappers around guards, handler and response (a promise and a microtask each), and the
 * interceptor chain (the app has no interceptors). A method without a guard or handler that
 * answers asynchronously costs no promise at all.
 *
 * The method keeps its metadata decorators (`@Requires`, `@Accepts`, ...) but no route
 * decorator (`@Put`): the controller registers it here from its `onModuleInit`, the one place
 * it is routed. Fastify's hooks (request id, metrics, billing's charge in `onResponse`, the deprecation hook
 * of the OpenAPI route table) see it as any other route.
 */
import { CanActivate, ExceptionFilter, ForbiddenException, Inject, Injectable, Type } from '@nestjs/common';
import { HttpAdapterHost, ModuleRef } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { APP_CONFIG, AppConfig } from '../config';
import { ErrorFilter } from './error.filter';
import { globalGuards } from './guards';

/** Nest's words for a guard answering false (@nestjs/core guards/constants). */
const FORBIDDEN_MESSAGE = 'Forbidden resource';

/** A controller method a direct route calls: `(req, reply)` → the body to send (or its promise). */
export type DirectHandler = (req: FastifyRequest, reply: FastifyReply) => unknown;

@Injectable()
export class DirectRoutes {
  private guards?: CanActivate[];
  private filter?: ExceptionFilter;

  constructor(
    private readonly host: HttpAdapterHost,
    private readonly refs: ModuleRef,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /**
   * Routes `method url` to `controller`'s method `name` (called on `instance`). Call it from the
   * controller's `onModuleInit`: after Nest has built every provider, before the server listens.
   */
  add<C extends object>(method: 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE', url: string, instance: C, name: keyof C & string): void {
    this.guards ??= globalGuards(this.config).map((g) => this.refs.get(g, { strict: false }));
    this.filter ??= this.refs.get(ErrorFilter, { strict: false });
    const guards = this.guards;
    const filter = this.filter;
    const controller = instance.constructor as Type<unknown>;
    const fn = instance[name] as unknown as DirectHandler;
    const fail = (e: unknown, req: FastifyRequest, reply: FastifyReply) => filter.catch(e, new ExecutionContextHost([req, reply, undefined]));
    /** The guards from the `i`th on (after one answered a promise), then the handler. */
    const resume = async (req: FastifyRequest, reply: FastifyReply, ctx: ExecutionContextHost, i: number, pending: Promise<boolean>) => {
      if (!(await pending)) throw new ForbiddenException(FORBIDDEN_MESSAGE);
      for (let j = i + 1; j < guards.length; j++) if (!(await guards[j].canActivate(ctx))) throw new ForbiddenException(FORBIDDEN_MESSAGE);
      reply.send(await fn.call(instance, req, reply));
    };
    const handler = (req: FastifyRequest, reply: FastifyReply): void => {
      const params = req.params as Record<string, string>;
      for (const k in params) {
        if (params[k] === '') {
          reply.callNotFound();
          return;
        }
      }
      try {
        const ctx = new ExecutionContextHost([req, reply, undefined], controller, fn);
        ctx.setType('http');
        for (let i = 0; i < guards.length; i++) {
          const ok = guards[i].canActivate(ctx);
          if (ok === true) continue;
          if (ok === false) throw new ForbiddenException(FORBIDDEN_MESSAGE);
          // a guard waiting (a tenant's store or catalog still opening): the rest asynchronously
          resume(req, reply, ctx, i, Promise.resolve(ok as boolean | Promise<boolean>)).catch((e) => fail(e, req, reply));
          return;
        }
        const out = fn.call(instance, req, reply);
        if (out instanceof Promise) {
          out.then(
            (body) => reply.send(body),
            (e) => fail(e, req, reply),
          );
        } else reply.send(out);
      } catch (e) {
        fail(e, req, reply);
      }
    };
    (this.host.httpAdapter.getInstance() as FastifyInstance).route({ method, url, handler });
  }
}
