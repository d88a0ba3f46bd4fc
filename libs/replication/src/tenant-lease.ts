/**
 * One tenant's writer lease on this node: the role state machine (candidate → leader |
 * follower), renewal, loss detection, fencing, step-down and hand-over. See DESIGN.md.
 *
 * @example
 *   const lease = new TenantLease({ tenant, node: 'n1', advertiseUrl, ttlMs: 5000, store, host });
 *   await lease.start();
 *   lease.checkWrite(); // throws 503 service_unavailable unless this node holds a live lease
 */
import { performance } from 'perf_hooks';
import { DbError } from '@mmdb/core';
import { deferTo } from './election';
import type { LeaseGrant, LeaseRecord, LeaseStore, NodePosition, Role } from './lease-store';

/** What the lease needs from the node that owns the tenant's store. */
export interface LeaseHost {
  /** The store's position: last LSN and the epoch of the frame at it. */
  position(): { lsn: number; epoch: number };
  /** Runs once the lease is taken and before any write is allowed: stamps `epoch` into the store. */
  becomeLeader(epoch: number): Promise<void>;
  /** The node now follows `lease` (another node's), or no one (`null`: vacant). */
  follow(lease: LeaseRecord | null): void;
  /** False while this node must not take the lease (e.g. a follower still bootstrapping). */
  eligible?(): boolean;
}

export interface TenantLeaseOptions {
  readonly tenant: string;
  readonly node: string;
  readonly advertiseUrl: string;
  /** This node's TLS certificate (PEM), published with the lease for followers to pin. */
  readonly certPem?: string;
  readonly ttlMs: number;
  readonly store: LeaseStore;
  readonly host: LeaseHost;
  readonly log?: (message: string) => void;
}

/** A role change, for metrics and logs. */
export interface RoleChange {
  readonly role: Role;
  readonly epoch: number;
  readonly holder: string | null;
}

const now = (): number => performance.now();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class TenantLease {
  role: Role = 'candidate';
  /** The last lease seen in the coordinator (ours or another node's). */
  lease: LeaseRecord | null = null;
  /** The highest epoch this node has seen (its own, a lease's, a frame's). */
  maxEpoch = 0;
  private grant: LeaseGrant | null = null;
  /** Monotonic deadline of the current grant: renew sent at t and acknowledged ⇒ valid until t + TTL. */
  private validUntil = 0;
  /** The latest deadline any grant of this node reached (not reset when the lease is lost): until then its store was the holder's. */
  private heldUntil = -Infinity;
  private handingOver: string | null = null;
  private stopped = true;
  private timer: NodeJS.Timeout | undefined;
  private unwatch: (() => Promise<void>) | null = null;
  private ticking: Promise<void> | null = null;
  private again = false;
  /** Until then this node does not stand for election (after a step-down, or deferring to a better candidate). */
  private quietUntil = 0;
  private deferringSince = 0;
  private readonly listeners: Array<(c: RoleChange) => void> = [];

  constructor(private readonly o: TenantLeaseOptions) {}

  get tenant(): string {
    return this.o.tenant;
  }

  get node(): string {
    return this.o.node;
  }

  get ttlMs(): number {
    return this.o.ttlMs;
  }

  /** The epoch this node writes with (0 when it is not the leader). */
  get epoch(): number {
    return this.grant?.epoch ?? 0;
  }

  onRole(fn: (c: RoleChange) => void): void {
    this.listeners.push(fn);
  }

  /**
   * Starts the state machine: its first step (which may take the lease) is awaited, unless
   * the coordinator does not answer within a TTL; then the node starts fenced and keeps trying.
   */
  async start(): Promise<void> {
    this.stopped = false;
    const first = this.tick();
    await Promise.race([first, sleep(this.o.ttlMs)]);
    void first.then(() => this.schedule());
  }

  /** Stops renewing; a leader gives the lease up so another node can take it at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    // A step stuck on an unreachable coordinator does not hold up the shutdown.
    await Promise.race([this.ticking, sleep(this.o.ttlMs)]);
    await this.unwatch?.().catch(() => undefined);
    const g = this.grant;
    this.lose(null);
    if (g) await this.o.store.release(g).catch(() => undefined);
  }

  /** performance.now() up to which this node last held a valid lease (-Infinity: never since it started). */
  get leaseHeldUntil(): number {
    return Math.min(this.heldUntil, now());
  }

  /** True while this node holds a lease it renewed less than a TTL ago and is not handing it over. */
  canWrite(): boolean {
    return this.role === 'leader' && this.grant !== null && now() < this.validUntil && this.handingOver === null && this.grant.epoch >= this.maxEpoch;
  }

  /** Throws 503 service_unavailable (retry: true), naming the holder, unless `canWrite()`. */
  checkWrite(): void {
    if (this.canWrite()) return;
    throw this.fenceError();
  }

  fenceError(): DbError {
    const l = this.lease;
    const other = l && l.holder !== this.o.node ? l : null;
    const why =
      this.handingOver !== null
        ? `it is handing the lease over to ${this.handingOver}`
        : this.role === 'leader'
          ? 'it could not renew its lease in time (fenced)'
          : other
            ? `the holder is ${other.holder} at ${other.advertise_url}`
            : 'the lease is vacant (an election is under way)';
    return new DbError('service_unavailable', `this node (${this.o.node}) does not hold the write lease of tenant ${this.o.tenant}: ${why}; retry against the holder`, {
      fenced: true,
      role: this.role,
      holder: other?.holder ?? null,
      holder_url: other?.advertise_url ?? null,
      epoch: Math.max(this.maxEpoch, l?.epoch ?? 0),
    });
  }

  /** A frame or a peer showed `epoch`: above our own, this node stops writing at once. */
  observeEpoch(epoch: number): void {
    if (epoch <= this.maxEpoch) return;
    this.maxEpoch = epoch;
    if (this.grant && epoch > this.grant.epoch) {
      this.o.log?.(`tenant ${this.o.tenant}: saw epoch ${epoch} above ours (${this.grant.epoch}); stepping down`);
      this.lose(this.lease);
      this.kick();
    }
  }

  /**
   * A peer claims to have seen `epoch` (a request parameter, not a frame): above our own, the
   * lease is checked against the coordinator at once instead of trusting the claim; a lost
   * lease fences the node then.
   */
  recheck(epoch: number): void {
    if (epoch > (this.grant?.epoch ?? this.maxEpoch)) this.kick();
  }

  /** Gives the lease up; other nodes elect a new holder. 409 conflict when this node does not hold it. */
  async stepDown(): Promise<LeaseRecord | null> {
    const g = this.requireHolder();
    this.quietUntil = now() + 2 * this.o.ttlMs;
    this.lose(this.lease);
    await this.o.store.release(g);
    this.kick();
    return this.o.store.read(this.o.tenant);
  }

  /**
   * Hands the lease to `target`: stops writing, waits until the target has applied every frame
   * (its published position), then releases; the other nodes defer to the target. 409 conflict
   * when this node does not hold the lease, a hand-over is already running, or the target does
   * not catch up within two TTLs (writing resumes then).
   */
  async handOver(target: string, timeoutMs = 2 * this.o.ttlMs): Promise<{ from: string; to: string; lsn: number }> {
    const g = this.requireHolder();
    if (this.handingOver !== null) throw new DbError('conflict', `lease busy: a hand-over to ${this.handingOver} is already in progress`);
    if (target === this.o.node) throw new DbError('validation_failed', `${target} already holds the lease`);
    const peers = await this.o.store.positions(this.o.tenant);
    if (!peers.some((p) => p.node === target)) {
      throw new DbError('validation_failed', `no live node named "${target}" serves tenant ${this.o.tenant} (known: ${peers.map((p) => p.node).join(', ') || 'none'})`);
    }
    this.handingOver = target;
    try {
      await this.o.store.markHandover(g, target);
      const lsn = this.o.host.position().lsn;
      const deadline = now() + timeoutMs;
      for (;;) {
        const p = (await this.o.store.positions(this.o.tenant)).find((x) => x.node === target);
        if (p && p.lsn >= lsn) break;
        if (now() > deadline) {
          await this.o.store.markHandover(g, null).catch(() => undefined);
          throw new DbError('conflict', `lease busy: ${target} did not catch up to lsn ${lsn} within ${timeoutMs} ms (it is at ${p?.lsn ?? 'unknown'}); this node keeps the lease`);
        }
        await sleep(50);
      }
      this.quietUntil = now() + 2 * this.o.ttlMs;
      this.lose(this.lease);
      await this.o.store.release(g);
      this.kick();
      return { from: this.o.node, to: target, lsn };
    } finally {
      this.handingOver = null;
    }
  }

  private requireHolder(): LeaseGrant {
    if (!this.grant || this.role !== 'leader') {
      const l = this.lease;
      throw new DbError('conflict', `lease busy: ${l ? `held by ${l.holder} (epoch ${l.epoch})` : 'vacant'}, not by this node (${this.o.node})`, {
        holder: l?.holder ?? null,
        holder_url: l?.advertise_url ?? null,
        epoch: l?.epoch ?? null,
      });
    }
    return this.grant;
  }

  /** Publishes this node's position now (followers call it after applying). */
  async publish(): Promise<void> {
    const pos = this.o.host.position();
    const p: NodePosition = { node: this.o.node, advertise_url: this.o.advertiseUrl, lsn: pos.lsn, epoch: pos.epoch, role: this.role, at: Date.now() };
    await this.o.store.publishPosition(this.o.tenant, p);
  }

  private setRole(role: Role, holder: string | null): void {
    if (role === this.role && role !== 'follower') return;
    const changed = role !== this.role;
    this.role = role;
    if (changed) {
      this.o.log?.(`tenant ${this.o.tenant}: ${this.o.node} is now ${role}${holder ? ` (holder ${holder})` : ''}, epoch ${this.epoch || this.maxEpoch}`);
      for (const fn of this.listeners) fn({ role, epoch: this.epoch || this.maxEpoch, holder });
    }
  }

  private lose(lease: LeaseRecord | null): void {
    this.grant = null;
    this.validUntil = 0;
    this.setRole('candidate', lease?.holder ?? null);
  }

  /** Re-evaluates soon (a watch event, a role change). */
  private kick(): void {
    if (this.stopped) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.run(), 0);
  }

  private schedule(): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.run(), Math.max(20, Math.floor(this.o.ttlMs / 4)));
  }

  private async run(): Promise<void> {
    if (this.stopped || this.ticking) return;
    do {
      this.again = false;
      await this.tick();
    } while (this.again && !this.stopped);
    this.schedule();
  }

  /** One step of the state machine. Never throws. */
  private tick(): Promise<void> {
    const t = (this.ticking = this.step()
      .catch((e: unknown) => this.o.log?.(`tenant ${this.o.tenant}: lease step failed: ${(e as Error).message}`))
      .finally(() => {
        if (this.ticking === t) this.ticking = null;
      }));
    return t;
  }

  private async step(): Promise<void> {
    // Watch the key (set up again until it works: etcd may be down when the node starts).
    if (!this.unwatch) this.unwatch = await this.o.store.watch(this.o.tenant, () => this.kick());
    if (this.grant) {
      await this.renew(this.grant);
      if (this.grant) {
        await this.publish().catch(() => undefined);
        return;
      }
    }
    const lease = await this.o.store.read(this.o.tenant);
    this.lease = lease;
    if (lease) {
      this.observeEpoch(lease.epoch);
      this.deferringSince = 0;
      if (lease.holder !== this.o.node) {
        this.setRole('follower', lease.holder);
        this.o.host.follow(lease);
      }
      await this.publish().catch(() => undefined);
      return;
    }
    this.setRole('candidate', null);
    this.o.host.follow(null);
    await this.elect();
  }

  private async renew(g: LeaseGrant): Promise<void> {
    const sent = now();
    let ok: boolean;
    try {
      // Wait until the grant would lapse, or half a TTL once it has (a late renewal is still
      // safe: etcd only answers it while no one else can hold the key).
      ok = await this.o.store.renew(g, Date.now() + Math.max(this.validUntil - sent, this.o.ttlMs / 2));
    } catch (e) {
      // Unknown: keep the deadline we have; writes stop by themselves once it passes.
      this.o.log?.(`tenant ${this.o.tenant}: lease renewal failed: ${(e as Error).message}`);
      return;
    }
    if (this.grant !== g) return;
    if (ok) {
      this.validUntil = Math.max(this.validUntil, sent + this.o.ttlMs);
      this.heldUntil = Math.max(this.heldUntil, this.validUntil);
    }
    else {
      this.o.log?.(`tenant ${this.o.tenant}: lease epoch ${g.epoch} is gone`);
      this.lose(null);
    }
  }

  /** Vacant lease: the most up-to-date live node (by epoch, then LSN, then name) takes it. */
  private async elect(): Promise<void> {
    if (this.o.host.eligible && !this.o.host.eligible()) return;
    if (now() < this.quietUntil) return;
    // Followers publish their position within 100 ms of applying (Replica.publishSoon), long
    // before a lease can expire; this publish and the short settle cover candidates that
    // noticed the vacancy at the same moment.
    await this.publish();
    await sleep(Math.min(100, Math.floor(this.o.ttlMs / 10)));
    const mine = { node: this.o.node, ...this.o.host.position() };
    const handover = await this.o.store.handover(this.o.tenant);
    if (handover === this.o.node) this.deferringSince = 0;
    const other = deferTo(mine, await this.o.store.positions(this.o.tenant), handover, Date.now() - 2 * this.o.ttlMs);
    if (other) {
      // Give the better candidate (or the hand-over's target) a TTL to take the lease; then anyone may.
      if (!this.deferringSince) this.deferringSince = now();
      if (now() - this.deferringSince < this.o.ttlMs) return;
    }
    const sent = now();
    const r = await this.o.store.acquire(this.o.tenant, {
      holder: this.o.node,
      advertise_url: this.o.advertiseUrl,
      ttl_ms: this.o.ttlMs,
      ...(this.o.certPem ? { cert_pem: this.o.certPem } : {}),
    });
    this.lease = r.lease;
    this.deferringSince = 0;
    if (!r.grant) {
      if (r.lease) {
        this.observeEpoch(r.lease.epoch);
        this.setRole('follower', r.lease.holder);
        this.o.host.follow(r.lease);
      }
      return;
    }
    this.maxEpoch = Math.max(this.maxEpoch, r.grant.epoch);
    try {
      await this.o.host.becomeLeader(r.grant.epoch);
    } catch (e) {
      this.o.log?.(`tenant ${this.o.tenant}: could not start leading: ${(e as Error).message}`);
      await this.o.store.release(r.grant).catch(() => undefined);
      return;
    }
    this.grant = r.grant;
    this.validUntil = sent + this.o.ttlMs;
    this.heldUntil = Math.max(this.heldUntil, this.validUntil);
    this.setRole('leader', this.o.node);
    if (handover !== null) await this.o.store.markHandover(r.grant, null).catch(() => undefined);
    await this.publish().catch(() => undefined);
  }
}
