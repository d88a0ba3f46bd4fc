import type { Acting } from '../security/catalog';
import * as fs from 'fs';
import * as path from 'path';
import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { DbError, INTERNAL_TABLE_MARK, isDbError, isInternalTable, reservedTableName } from '@mmdb/core';
import { APP_CONFIG, AppConfig } from '../config';
import { EngineContext, EngineFactory, EngineHooks, participantsOf } from './engines';
import { parseManifest, type CommitRequest, type CommitResult } from '@mmdb/storage';
import { Metrics } from '../health/metrics.service';
import { SystemStore } from '../system/system-store';
import { openTenantStore, tenantDir, tenantsOnDisk, TenantStore } from './store-port';
import { Pressure } from './pressure';

/**
 * One tenant's open store and the feature engines built for it. Controllers get it from
 * the request (`@TenantCtx()`), after the auth guard has checked the token.
 */
export class TenantHandle {
  /**
   * The database user of the request: set on a per-request view of the handle
   * (`Object.create(handle)`, by the GrantGuard), so every surface that takes the handle sees it.
   */
  declare readonly acting?: Acting;

  /**
   * Runs after every commit of this tenant with its LSN (replication's sync window: waits for
   * follower acknowledgements, may throw 504; 'degraded' when they did not come in time).
   * Unset on a single node.
   */
  afterCommit: ((lsn: number) => Promise<'degraded' | void>) | null = null;

  /**
   * Set on a request's own view of the handle (ReplicationGuard): called when a commit of that
   * request missed the sync window, to answer with `X-DB-Replication: degraded`.
   */
  declare readonly onDegraded?: () => void;

  constructor(
    readonly tenant: string,
    readonly store: TenantStore,
    private readonly engines: ReadonlyMap<string, unknown>,
  ) {}

  /** The engine a feature registered under `name` (see DESIGN.md). */
  engine<T>(name: string): T {
    if (!this.engines.has(name)) throw new DbError('internal_error', `no engine "${name}" is registered`);
    return this.engines.get(name) as T;
  }

  /**
   * Runs one write against the store. The store itself refuses writes with 503
   * `service_unavailable` (retry: true) when its commit queue is full or the disk is under
   * its floor; a raw ENOSPC that escapes is mapped to the same answer here.
   */
  async write<T>(fn: (store: TenantStore) => Promise<T>): Promise<T> {
    try {
      return await fn(this.store);
    } catch (e) {
      throw diskFull(e);
    }
  }

  /** `store.commit` through `write`, then the replication sync window if any. */
  async commit(req: CommitRequest): Promise<CommitResult> {
    // Only a migration (libs/migrations, straight on the store) registers an internal table.
    for (const c of req.changes) {
      if (c.op !== 'schema_put' || typeof c.toml !== 'string' || !c.toml.toLowerCase().includes(INTERNAL_TABLE_MARK)) continue;
      const m = (() => { try { return parseManifest(c.toml); } catch { return undefined; } })();
      if (m && isInternalTable(m.table) && !this.store.manifest(m.id)) throw reservedTableName(m.table);
    }
    // as `write` does, without its own async step (every row write passes here)
    let res: CommitResult;
    try {
      res = await this.store.commit(req);
    } catch (e) {
      throw diskFull(e);
    }
    if (this.afterCommit && res.lsn > 0 && (await this.afterCommit(res.lsn)) === 'degraded') this.onDegraded?.();
    return res;
  }
}

/** A raw ENOSPC as 503 `service_unavailable` (disk_full); any other error as is. */
function diskFull(e: unknown): unknown {
  if ((e as NodeJS.ErrnoException)?.code === 'ENOSPC') return new DbError('service_unavailable', 'the disk is full: writes are refused', { pressure: 'disk_full' });
  return e;
}

/** Called for every tenant store the registry opens, and before it closes (replication). */
export interface StoreHooks {
  /** Right after the store opens, before anything commits to it (replication installs its fence here). */
  created?(tenant: string, store: TenantStore): void;
  opened(handle: TenantHandle): void | Promise<void>;
  closing(handle: TenantHandle): void | Promise<void>;
}

/**
 * The per-tenant composition root: opens one TenantStore per tenant lazily under
 * `<dataDir>/tenants/<tenant>`, with the participants of every registered engine.
 */
@Injectable()
export class TenantRegistry implements OnApplicationShutdown {
  private readonly log = new Logger('TenantRegistry');
  private readonly factories = new Map<string, EngineFactory>();
  private readonly handles = new Map<string, Promise<TenantHandle>>();
  /** Handles whose store is open, for the synchronous fast path of the auth guard. */
  private readonly ready = new Map<string, TenantHandle>();
  private sealed = false;
  private readonly hooks: StoreHooks[] = [];
  /** Tenants the start-up warm-up has yet to open (`warmUp`); `stopping`: shutdown began, open no more. */
  private readonly warming = new Set<string>();
  private stopping = false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    readonly pressure: Pressure,
    private readonly metrics: Metrics,
    private readonly system: SystemStore,
  ) {
    // A tenant's token changes are frames of its own log, committed through its open store.
    system.attachCatalog({
      commitCatalog: async (tenant, changes, actor, idempotency) => {
        try {
          const res = await (await this.get(tenant)).commit({ changes, actor, route: 'tokens', ...(idempotency ? { idempotency } : {}) });
          if (res.replayed) return { replayed: res.replayed };
        } catch (e) {
          // A replica that may not write (a follower, or before its lease is decided): the
          // change stays a pending record of this node (the bootstrap token at start), moved
          // into the log if this node becomes the holder; the holder's own copy arrives in its frames.
          if (isDbError(e) && e.details.fenced === true) return false;
          throw e;
        }
      },
    });
  }

  /**
   * Registers a feature's per-store engine. Call it from the feature module's constructor;
   * engines are built in registration order each time a tenant store opens.
   *
   * @example
   *   constructor(tenants: TenantRegistry) {
   *     tenants.registerEngine('vector', (ctx) => new VectorIndexes({ dir: ctx.dir }));
   *   }
   */
  registerEngine<T>(name: string, factory: EngineFactory<T>): void {
    if (this.sealed) throw new Error(`engine "${name}" registered after a tenant store was opened`);
    if (this.factories.has(name)) throw new Error(`engine "${name}" is registered twice`);
    this.factories.set(name, factory);
  }

  /** Registers hooks run when a tenant store opens (before any request sees it) and before it closes. */
  addHooks(h: StoreHooks): void {
    this.hooks.push(h);
  }

  get engineNames(): string[] {
    return [...this.factories.keys()];
  }

  tenantDir(tenant: string): string {
    return tenantDir(this.config.dataDir, tenant);
  }

  /** The tenant's handle, opening its store on first use. The caller has checked the tenant exists. */
  get(tenant: string): Promise<TenantHandle> {
    return this.handles.get(tenant) ?? this.track(tenant, this.open(tenant));
  }

  /** Makes `h` the tenant's handle: ready (for `peek`) once open, forgotten if the open fails. */
  private track(tenant: string, h: Promise<TenantHandle>): Promise<TenantHandle> {
    this.handles.set(tenant, h);
    h.then(
      (handle) => {
        if (this.handles.get(tenant) === h) this.ready.set(tenant, handle);
      },
      () => {
        if (this.handles.get(tenant) === h) this.handles.delete(tenant);
      },
    );
    return h;
  }

  /**
   * Replaces a tenant's store: closes the open handle (hooks, engines, store), lets `swap`
   * put a new store directory in place (it is given the store's path), and opens it again.
   * Requests meanwhile wait for the new handle. (Replication's bootstrap from a snapshot.)
   */
  replaceStore(tenant: string, swap: (storeDir: string) => Promise<void>): Promise<TenantHandle> {
    const old = this.handles.get(tenant);
    this.ready.delete(tenant);
    return this.track(
      tenant,
      (async () => {
        const h = old ? await old.catch(() => null) : null;
        if (h) await this.closeHandle(h);
        await swap(path.join(this.tenantDir(tenant), 'store'));
        return this.open(tenant);
      })(),
    );
  }

  /** The tenant's handle if its store is already open (no promise, no microtask), else undefined. */
  peek(tenant: string): TenantHandle | undefined {
    return this.ready.get(tenant);
  }

  /**
   * Liveness (spec §4.1 "the log is mounted"): the system store and every open tenant store have
   * their log open. Names what is not (a closed or failed store); empty when all is well.
   */
  async unmounted(): Promise<string[]> {
    const out: string[] = [];
    if (!this.system.mounted) out.push('_system');
    for (const h of this.openNow()) if (!h.store.mounted) out.push(h.tenant);
    return out;
  }

  /**
   * Opens every tenant store on this node's disk, one after another, in the background: the
   * server listens first, and `/ready?require=read` answers 503 until `loading()` is empty
   * (apps/api/README.md "Start-up"). A request for a tenant still loading waits for its open.
   */
  async warmUp(): Promise<void> {
    const all = tenantsOnDisk(this.config.dataDir).filter((t) => this.system.hasTenant(t));
    for (const t of all) this.warming.add(t);
    for (const t of all) {
      if (this.stopping) break;
      try {
        await this.get(t);
      } catch (e) {
        this.log.error(`opening tenant ${t} at start: ${(e as Error).message}`);
      } finally {
        this.warming.delete(t);
      }
    }
    this.warming.clear();
  }

  /** Tenants whose store (and the derived state its participants load) is not open yet: waiting for the warm-up, or opening. */
  loading(): string[] {
    const out = new Set(this.warming);
    for (const t of this.handles.keys()) if (!this.ready.has(t)) out.add(t);
    return [...out];
  }

  /** Handles whose store is open now, without waiting for those still opening (probes answer at once). */
  openNow(): TenantHandle[] {
    return [...this.ready.values()];
  }

  /** Handles already open, after waiting for those being opened (for /metrics and shutdown). */
  async openHandles(): Promise<TenantHandle[]> {
    const out: TenantHandle[] = [];
    for (const h of this.handles.values()) {
      try {
        out.push(await h);
      } catch {
        /* a failed open is not a handle */
      }
    }
    return out;
  }

  private async open(tenant: string): Promise<TenantHandle> {
    this.sealed = true;
    // the open's steps, ms since the process started (logged with "opened tenant"; the store's
    // own steps are its RecoveryReport.phases)
    const phases: Array<[string, number, number]> = [];
    let mark = performance.now();
    const step = (name: string) => {
      const now = performance.now();
      phases.push([name, Math.round(mark), Math.round(now)]);
      mark = now;
    };
    const dir = this.tenantDir(tenant);
    fs.mkdirSync(dir, { recursive: true });
    const ctx: EngineContext = { tenant, dir };
    const engines = new Map<string, unknown>();
    const participants: unknown[] = [];
    for (const [name, factory] of this.factories) {
      const engine = await factory(ctx);
      engines.set(name, engine);
      participants.push(...participantsOf(engine));
    }
    step('engines');
    const store = await openTenantStore({
      dir: path.join(dir, 'store'),
      participants,
      sync: this.config.sync,
      deferRedoableSync: this.config.deferBackfillSync,
      backgroundPieceMs: this.config.backfillPieceUs / 1000,
      backgroundHoldMs: this.config.backfillHoldMs,
      queueLimit: this.config.commitQueueMax,
      minFreeBytes: this.config.minFreeBytes,
      writeBufferBytes: this.config.writeBufferBytes,
      tableFileBytes: this.config.tableFileBytes,
      checkpointFrames: this.config.checkpointFrames,
      checkpointMs: this.config.checkpointMs,
      segmentFrames: this.config.logSegmentFrames,
    });
    step('store');
    this.observeGroups(tenant, store);
    for (const h of this.hooks) h.created?.(tenant, store);
    await this.migrateLegacy(tenant, store);
    step('token migration');
    const peers = { engine: <T>(name: string) => engines.get(name) as T | undefined };
    for (const engine of engines.values()) await (engine as EngineHooks)?.attach?.(store, peers);
    step('attach');
    const handle = new TenantHandle(tenant, store, engines);
    for (const h of this.hooks) await h.opened(handle);
    step('opened hooks');
    const storePhases = (store.recovery?.phases ?? []).map((p) => [p.name, Math.round(p.start), Math.round(p.end)]);
    const cpu = process.cpuUsage(); // the process's CPU ms so far (all threads): the open's cost on a busy host
    const cpuMs = Math.round((cpu.user + cpu.system) / 1000);
    this.log.log(`opened tenant ${tenant} with engines [${[...engines.keys()].join(', ')}]; phases ${JSON.stringify({ tenant: phases, store: storePhases, cpuMs })}`);
    return handle;
  }

  /**
   * Moves the tenant's pending token records (kept in _system) into its log. A replica that
   * may not write keeps them pending; it runs this again when it becomes the holder.
   */
  async migrateLegacy(tenant: string, store: TenantStore): Promise<void> {
    try {
      await this.system.migrateLegacy(tenant, (changes) => store.commit({ changes, actor: 'system', route: 'token migration' }));
    } catch (e) {
      if (!(isDbError(e) && e.details.fenced === true)) throw e;
    }
  }

  /**
   * Frames of one durable group are published together in one tick: count them as a group.
   * Token changes in the tenant's frames (its own, or a leader's applied by a follower) go to
   * the node's token index.
   */
  private observeGroups(tenant: string, store: TenantStore): void {
    let n = 0;
    store.changes.subscribe((frame) => {
      if (n === 0) {
        setImmediate(() => {
          this.metrics.commitGroupSize.observe(n);
          n = 0;
        });
      }
      n++;
      let rows = 0;
      for (const c of frame.changes) {
        if (c.op === 'put' || c.op === 'delete') rows++;
        else if (c.op === 'catalog' && c.kind === 'token') this.system.applyTokenChange(tenant, c.id, c.record);
      }
      if (rows) this.metrics.commitChanges.observe(rows);
    });
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    const all = await this.openHandles();
    this.handles.clear();
    this.ready.clear();
    for (const h of all) await this.closeHandle(h);
  }

  /** Runs the closing hooks, closes the engines (in reverse order) and the store of one handle. */
  private async closeHandle(h: TenantHandle): Promise<void> {
    for (const hook of this.hooks) {
      try {
        await hook.closing(h);
      } catch (e) {
        this.log.error(`closing hooks of ${h.tenant}: ${(e as Error).message}`);
      }
    }
    for (const name of [...this.factories.keys()].reverse()) {
      try {
        await (h.engine(name) as EngineHooks)?.close?.();
      } catch (e) {
        this.log.error(`closing engine ${name} of ${h.tenant}: ${(e as Error).message}`);
      }
    }
    try {
      await h.store.close();
    } catch (e) {
      this.log.error(`closing store of ${h.tenant}: ${(e as Error).message}`);
    }
  }
}
