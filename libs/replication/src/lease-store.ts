/**
 * The port the lease manager needs from a coordinator (ARCHITECTURE.md §5). The composition
 * root (apps/api) fills it with `EtcdLeaseStore` when DB_ETCD_ENDPOINTS is set; a single node
 * without etcd has no lease at all.
 */

/** What a node asks for when it claims a tenant's lease. */
export interface LeaseClaim {
  /** DB_NODE_NAME of the claiming node. */
  readonly holder: string;
  /** DB_ADVERTISE_URL: where followers and clients reach the holder. */
  readonly advertise_url: string;
  readonly ttl_ms: number;
  /** The holder's TLS certificate (PEM), which followers pin when no CA file is configured. */
  readonly cert_pem?: string;
}

/** The lease as `GET /v1/replication/lease` shows it. Times are ms since the UNIX epoch. */
export interface LeaseRecord {
  readonly tenant: string;
  readonly holder: string;
  /** The fencing epoch: the etcd revision that created the lease key (strictly increasing). */
  readonly epoch: number;
  readonly advertise_url: string;
  readonly ttl_ms: number;
  readonly acquired_at: number;
  /** When the coordinator expires the lease unless it is renewed (second granularity), or null if unknown. */
  readonly expires_at: number | null;
  /** A hand-over in progress: the node the holder is handing the lease to. */
  readonly handing_over_to?: string | null;
  /** The holder's TLS certificate (PEM) for followers to pin (not shown by the HTTP route). */
  readonly cert_pem?: string;
}

/** Proof of holding a tenant's lease, given by `acquire` and passed back to renew or release it. */
export interface LeaseGrant {
  readonly tenant: string;
  readonly epoch: number;
  /** The coordinator's lease id. */
  readonly id: string;
  readonly ttlMs: number;
}

/** A node's replication position, published so the most up-to-date follower wins an election. */
export interface NodePosition {
  readonly node: string;
  readonly advertise_url: string;
  /** Last applied (or written) LSN. */
  readonly lsn: number;
  /** Epoch of the frame at that LSN (0 for an empty log). */
  readonly epoch: number;
  readonly role: Role;
  readonly at: number;
}

export type Role = 'leader' | 'follower' | 'candidate';

export type AcquireResult = { readonly grant: LeaseGrant; readonly lease: LeaseRecord } | { readonly grant: null; readonly lease: LeaseRecord | null };

export interface LeaseStore {
  /** Takes the tenant's lease if it is vacant; otherwise answers the current holder. */
  acquire(tenant: string, claim: LeaseClaim): Promise<AcquireResult>;
  /**
   * Renews the lease. True: renewed for another TTL from about when the call was sent.
   * False: the coordinator says it is gone (expired, revoked or taken over). Throws when the
   * coordinator did not answer before `deadline` (ms since the epoch): the holder cannot know.
   */
  renew(grant: LeaseGrant, deadline: number): Promise<boolean>;
  /** Gives the lease up (the key is deleted only while it is still this grant's). */
  release(grant: LeaseGrant): Promise<void>;
  /** The tenant's lease, or null when vacant. */
  read(tenant: string): Promise<LeaseRecord | null>;
  /** Calls `onChange` whenever the tenant's lease key changes (taken, renewed with new info, released, expired). */
  watch(tenant: string, onChange: () => void): Promise<() => Promise<void>>;
  /**
   * Records the holder's intent to hand the lease to `target` (null clears it), in the lease
   * and in a record that outlives the lease by two TTLs, so that the election after the release
   * defers to the target.
   */
  markHandover(grant: LeaseGrant, target: string | null): Promise<boolean>;
  /** The node a recent hand-over names, or null. */
  handover(tenant: string): Promise<string | null>;
  /** Publishes this node's position (kept only while the node is alive). */
  publishPosition(tenant: string, position: NodePosition): Promise<void>;
  /** Every live node's position for the tenant. */
  positions(tenant: string): Promise<NodePosition[]>;
  close(): Promise<void>;
}
