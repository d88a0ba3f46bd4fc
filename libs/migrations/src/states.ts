/**
 * The migration state machine (DESIGN.md has the diagram). Every move goes through `move`,
 * which refuses a move the table does not list with 409 `conflict` (spec 3.1).
 */
import { DbError } from '@mmdb/core';

export type MigrationState = 'Pending' | 'Backfilling' | 'Paused' | 'ReadyToCutover' | 'Completed' | 'Aborted' | 'Failed';
export const MIGRATION_STATES: readonly MigrationState[] = ['Pending', 'Backfilling', 'Paused', 'ReadyToCutover', 'Completed', 'Aborted', 'Failed'];

/** The triggers, as the audit log names them. */
export type Trigger = 'submit' | 'start' | 'pause' | 'resume' | 'ready' | 'cutover' | 'auto-cutover' | 'abort' | 'failure' | 'cleanup';

const NEXT: Record<Exclude<Trigger, 'submit' | 'cleanup'>, { from: readonly MigrationState[]; to: MigrationState }> = {
  start: { from: ['Pending'], to: 'Backfilling' },
  pause: { from: ['Pending', 'Backfilling'], to: 'Paused' },
  resume: { from: ['Paused'], to: 'Backfilling' },
  ready: { from: ['Backfilling'], to: 'ReadyToCutover' },
  cutover: { from: ['ReadyToCutover'], to: 'Completed' },
  'auto-cutover': { from: ['ReadyToCutover'], to: 'Completed' },
  abort: { from: ['Pending', 'Backfilling', 'Paused', 'ReadyToCutover'], to: 'Aborted' },
  failure: { from: ['Pending', 'Backfilling', 'Paused', 'ReadyToCutover'], to: 'Failed' },
};

/** The state a trigger leads to from `state`, or 409 `conflict` naming why. */
export function move(id: string, state: MigrationState, trigger: Exclude<Trigger, 'submit' | 'cleanup'>): MigrationState {
  const t = NEXT[trigger];
  if (t.from.includes(state)) return t.to;
  const why =
    trigger === 'abort' && state === 'Completed'
      ? 'it is already cut over'
      : trigger === 'cutover'
        ? 'only a migration in ReadyToCutover can be cut over'
        : `${trigger} is legal only from ${t.from.join(', ')}`;
  throw new DbError('conflict', `migration ${id} is ${state}: ${why}`, { migration: id, state });
}

export function isFinal(s: MigrationState): boolean {
  return s === 'Completed' || s === 'Aborted' || s === 'Failed';
}
