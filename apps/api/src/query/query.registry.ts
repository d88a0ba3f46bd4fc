import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import type { SqlEngine } from '@mmdb/sql';

/** Running queries across tenants, by query id, so POST /v1/queries/{id}/cancel can find them. */
@Injectable()
export class QueryRegistry implements OnModuleDestroy {
  private readonly running = new Map<string, { tenant: string; engine: SqlEngine }>();

  begin(id: string, tenant: string, engine: SqlEngine): void {
    this.running.set(id, { tenant, engine });
  }

  end(id: string): void {
    this.running.delete(id);
  }

  /** Cancels a running query of `tenant` (undefined = operator, any tenant). False when unknown or finished. */
  cancel(id: string, tenant: string | undefined): boolean {
    const r = this.running.get(id);
    if (!r || (tenant !== undefined && r.tenant !== tenant)) return false;
    return r.engine.cancel(id);
  }

  /**
   * Shutdown (SIGTERM): cancel every running query, so each ends at its next budget check (within
   * milliseconds: the executor yields to the event loop) instead of holding the HTTP server's close
   * until its time budget runs out.
   */
  onModuleDestroy(): void {
    for (const [id, r] of this.running) r.engine.cancel(id);
  }
}
