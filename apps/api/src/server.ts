import 'reflect-metadata';
import * as fs from 'fs';
import { Logger, LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import Fastify from 'fastify';
import { ERROR_CATALOGUE, stringifyJson } from '@mmdb/core';
import { AppModule } from './app.module';
import type { AppConfig } from './config';
import { Metrics } from './health/metrics.service';
import { installBodyParsers } from './http/body';
import { requestId } from './http/request-id';
import { TenantRegistry } from './tenancy/tenant-registry';
import { Replication } from './replication/replication.service';
import { SystemStore } from './system/system-store';
import { loadOrCreateTls } from './tls';
import { lingerThen } from './http/linger';
import { CreditGuard } from './http/credit.guard';
import { errorBody } from './http/error.filter';
import { fanoutYieldsTo } from './watch/fanout';

export interface Server {
  /** This node's TLS certificate (PEM), when it serves HTTPS. */
  certPem?: string;
  readonly app: NestFastifyApplication;
  readonly system: SystemStore;
  /** `https://host:port` once listening. */
  url: string;
  close(): Promise<void>;
}

const LEVELS: Record<AppConfig['logLevel'], LogLevel[]> = {
  silent: [],
  error: ['fatal', 'error'],
  warn: ['fatal', 'error', 'warn'],
  info: ['fatal', 'error', 'warn', 'log'],
  debug: ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'],
};

/** Provisions the bootstrap tenant, or a first tenant on an empty data directory (printed once). */
async function provisionAtStart(config: AppConfig, system: SystemStore, log: Logger): Promise<void> {
  if (config.bootstrapTenant && config.bootstrapToken) {
    const { created } = await system.ensureTenant(config.bootstrapTenant, config.bootstrapToken);
    log.log(`bootstrap tenant ${config.bootstrapTenant} ${created ? 'created' : 'present'}`);
  } else if (system.tenantCount === 0) {
    const { tenant, token } = await system.createTenant();
    // Printed once to stdout: only the token's hash is kept.
    process.stdout.write(`first start: provisioned tenant ${tenant}\n  tenant: ${tenant}\n  token:  ${token}\n(the token is shown only now)\n`);
  }
}

/** Builds the app (not listening yet). */
export async function createServer(config: AppConfig): Promise<Server> {
  const log = new Logger('Server');
  Logger.overrideLogger(LEVELS[config.logLevel]);
  fs.mkdirSync(config.dataDir, { recursive: true });
  const system = await SystemStore.open(config.dataDir);
  try {
    let certPem: string | undefined;
    let https: { key: string; cert: string; minVersion: 'TLSv1.3'; maxVersion: 'TLSv1.3' } | undefined;
    if (!config.insecureHttp) {
      const tls = loadOrCreateTls(config);
      if (tls.generated) log.log(`made a self-signed certificate for localhost at ${tls.certPath}`);
      https = { key: tls.key, cert: tls.cert, minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3' };
      certPem = tls.cert;
    } else {
      log.warn('DB_INSECURE_HTTP is set: serving plain HTTP (only behind a TLS-terminating proxy)');
    }
    // The fastify instance is built here from our own `fastify` dependency (5.12+) and handed
    // to Nest: @nestjs/platform-fastify 11.2 pins fastify 5.11.3, whose content-type parser
    // calls AsyncResource.bind() for every request with a body (two util.deprecate wrappers per
    // call: ~8% of the CPU of a PUT). We use no Nest versioning, the one thing the adapter
    // adds to instances it builds itself.
    const instance = Fastify({
      ...(https ? { https } : {}),
      bodyLimit: config.bodyLimit,
      genReqId: () => requestId(),
      requestIdHeader: false,
      routerOptions: { maxParamLength: 2048 },
      keepAliveTimeout: 65_000,
      logger: false,
      // Errors fastify raises before routing (a path that is not a valid percent-encoding, a
      // malformed header) answer our error body too, not fastify's own shape.
      frameworkErrors: (err: Error & { code?: string; statusCode?: number }, req: any, reply: any) => {
        const code = err.statusCode === 400 || err.code === 'FST_ERR_BAD_URL' ? 'validation_failed' : 'internal_error';
        const message = err.code === 'FST_ERR_BAD_URL' ? `the path is not a valid URL (bad percent-encoding): ${String(req.url).slice(0, 200)}` : err.message;
        reply.status(ERROR_CATALOGUE[code].status).header('content-type', 'application/json; charset=utf-8').send(errorBody(code, message, String(req.id)));
      },
    } as any);
    // We register no Nest middleware, so @fastify/middie (which the adapter otherwise adds,
    // and which runs on every request) is left out: the adapter reads `skipMiddie` from the
    // object it is given.
    Object.assign(instance, { skipMiddie: true });
    const adapter = new FastifyAdapter(instance as any);
    const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config, system), adapter, {
      logger: LEVELS[config.logLevel],
      abortOnError: false,
      // Our own parsers (http/body.ts): Nest's would add a form-urlencoded one and a lossy JSON one.
      bodyParser: false,
    });
    const fastify = app.getHttpAdapter().getInstance();
    installBodyParsers(fastify as any);
    // Answers hold exact integers (bigint beyond ±2^53): JSON.stringify unless one is present.
    fastify.setReplySerializer((payload: unknown) => stringifyJson(payload));
    const metrics = app.get(Metrics);
    const credit = app.get(CreditGuard);
    // Callback-style hooks: an async hook costs a promise and a microtask per request.
    // requests in flight or just served (watch streams aside): the watch fan-out yields to them
    // (watch/turns.ts). Recent ones count too: under load the next is already on its way (a
    // request arriving during a slice waits for it). A request whose client went away may never
    // count out, so a second without any request starting or ending counts as none in flight.
    let serving = 0;
    let servedAt = -Infinity;
    fanoutYieldsTo(() => {
      const since = performance.now() - servedAt;
      return since < 50 || (serving > 0 && since < 1000);
    }, config.watchBusySliceUs / 1000);
    fastify.addHook('onRequest', (req: any, reply: any, done: () => void) => {
      reply.header('x-db-request-id', req.id);
      if (!req.routeOptions?.url?.endsWith('/watch')) {
        req.serving = true;
        serving++;
        servedAt = performance.now();
      }
      done();
    });
    fastify.addHook('onResponse', (req: any, reply: any, done: () => void) => {
      metrics.observeRequest(req.method, req.routeOptions?.url ?? 'unmatched', reply.statusCode, reply.elapsedTime);
      credit.settle(req, reply);
      if (req.serving) {
        serving = Math.max(0, serving - 1);
        servedAt = performance.now();
      }
      done();
    });
    // Shutdown: answers still in flight (a query cancelled by QueryRegistry) say `connection: close`,
    // so a keep-alive client's socket does not hold the server's close open after its answer.
    let closing = false;
    fastify.addHook('preClose', (done: () => void) => {
      closing = true;
      done();
    });
    fastify.addHook('onSend', (req: any, reply: any, payload: unknown, done: (e: null, p: unknown) => void) => {
      if (closing) reply.header('connection', 'close');
      // a refused oversized body: read the rest of it first (bounded), so the client reads the 413
      if (reply.statusCode === 413) lingerThen(req.raw, () => done(null, payload));
      else done(null, payload);
    });
    app.enableShutdownHooks();
    await app.init();
    // After init: the tenant registry commits token changes into the tenants' logs.
    try {
      await provisionAtStart(config, system, log);
    } catch (e) {
      await app.close();
      throw e;
    }
    const server: Server = {
      app,
      system,
      certPem,
      url: '',
      close: async () => {
        await app.close();
        await system.close();
      },
    };
    return server;
  } catch (e) {
    await system.close();
    throw e;
  }
}

/** Builds the app and listens on DB_HOST:DB_PORT. */
export async function startServer(config: AppConfig): Promise<Server> {
  const modules = performance.now();
  const server = await createServer(config);
  const built = performance.now();
  await server.app.listen(config.port, config.host);
  // process start → modules loaded → app built → listening (the tenants open after it: "opened tenant")
  new Logger('Boot').log(`ms since the process started: modules loaded ${Math.round(modules)}, app built ${Math.round(built)}, listening ${Math.round(performance.now())}`);
  const addr = server.app.getHttpServer().address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  server.url = `${config.insecureHttp ? 'http' : 'https'}://${host}:${port}`;
  // Every tenant store on disk opens in the background once the server listens (/ready?require=read is 503 until then).
  // (The English-question libraries, compromise and chrono-node, load at the first question:
  // libs/nlq words.ts. Loaded here, ~0.3 s on an idle host, they delayed the stores' open.)
  void server.app.get(TenantRegistry).warmUp();
  // Replication starts once the URL is known (the default advertise URL): it opens every
  // tenant and takes or follows each lease.
  await server.app.get(Replication).start(server.url, server.certPem);
  return server;
}
