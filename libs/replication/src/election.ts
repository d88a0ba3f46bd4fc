/**
 * Who should take a vacant lease: the live node with the most of the log, ranked by the epoch
 * of its last frame, then its LSN, then (a tie) the smaller name; a recent hand-over's target
 * before anyone. Pure, so the rule is tested on its own (election.spec.ts).
 */
import type { NodePosition } from './lease-store';

export interface Candidate {
  readonly node: string;
  readonly lsn: number;
  readonly epoch: number;
}

/** True when `a` ranks above `b`. */
export function ranksAbove(a: Candidate, b: Candidate): boolean {
  if (a.epoch !== b.epoch) return a.epoch > b.epoch;
  if (a.lsn !== b.lsn) return a.lsn > b.lsn;
  return a.node < b.node;
}

/**
 * The node `me` should leave the lease to, or null when it should try itself. Positions still
 * saying "leader" (the old holder's: the lease is vacant, so it is dead or gone) and positions
 * not refreshed since `freshSince` (a node that stopped publishing) are not waited for.
 */
export function deferTo(me: Candidate, positions: readonly NodePosition[], handover: string | null, freshSince: number): string | null {
  if (handover !== null) return handover === me.node ? null : handover;
  const better = positions.find((p) => p.node !== me.node && p.role !== 'leader' && p.at >= freshSince && ranksAbove(p, me));
  return better?.node ?? null;
}
