export * from './lease-store';
export { EtcdLeaseStore, etcdTtlSeconds } from './etcd-lease-store';
export { TenantLease } from './tenant-lease';
export type { LeaseHost, TenantLeaseOptions, RoleChange } from './tenant-lease';
export { AckTracker } from './acks';
export type { FollowerAck } from './acks';
export { openFrames } from './frames';
export type { FramesQuery, FramesLine, FramesSource } from './frames';
export { LocalEtcd, freePort } from './local-etcd';
