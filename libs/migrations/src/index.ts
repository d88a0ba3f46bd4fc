export { Migrations, publicView } from './engine';
export type { MigrationsOptions, SubmitInput, Page, MoveOptions } from './engine';
export { applyOperations, planManifest, OPERATION_KINDS } from './ops';
export type { Operation, Plan, RowMapping } from './ops';
export type { MigrationRecord, AuditEntry, Throttle, Progress } from './record';
export { MIGRATION_STATES, move, isFinal } from './states';
export type { MigrationState, Trigger } from './states';
export type { RowEvaluator, RowReshaper } from './mirror';
