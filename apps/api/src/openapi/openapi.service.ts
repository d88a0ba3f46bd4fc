import { Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { ERROR_CATALOGUE } from '@mmdb/core';
import { openApiDocument } from '@mmdb/client';
import { addDeprecationHook, documentedBy, isOwnRoute, type Registered } from './route-table';

/**
 * Collects the routes the server registers (its constructor runs before Nest registers the
 * controllers) and serves the OpenAPI document of those routes. A registered route the
 * registry does not document is listed under `x-mmdb-undocumented` (CI fails on any).
 */
@Injectable()
export class OpenApiService {
  private readonly registered: Registered[] = [];
  private doc?: Record<string, unknown>;

  constructor(host: HttpAdapterHost) {
    const fastify = host.httpAdapter.getInstance();
    fastify.addHook('onRoute', (r: { method: string | string[]; url: string; onRequest?: any }) => {
      for (const m of Array.isArray(r.method) ? r.method : [r.method]) {
        const reg = { method: m.toUpperCase(), url: r.url };
        this.registered.push(reg);
        addDeprecationHook(r, documentedBy(reg));
      }
    });
  }

  /** The routes the server answers (HEAD twins left out). */
  routes(): Registered[] {
    return this.registered.filter((r) => isOwnRoute(r, this.registered));
  }

  undocumented(): Registered[] {
    return this.routes().filter((r) => !documentedBy(r));
  }

  document(): Record<string, unknown> {
    if (!this.doc) {
      const only = new Set(this.routes().flatMap((r) => documentedBy(r)?.id ?? []));
      const doc = openApiDocument({ errors: ERROR_CATALOGUE, only });
      const missing = this.undocumented();
      this.doc = { ...doc, 'x-mmdb-undocumented': missing.map((r) => `${r.method} ${r.url}`) };
    }
    return this.doc;
  }
}
