import { deferTo, ranksAbove } from './election';
import type { NodePosition } from './lease-store';

const pos = (node: string, epoch: number, lsn: number, extra: Partial<NodePosition> = {}): NodePosition => ({
  node,
  epoch,
  lsn,
  advertise_url: `https://${node}`,
  role: 'follower',
  at: 1000,
  ...extra,
});

describe('election', () => {
  it('ranks by the epoch of the last frame, then the LSN, then the smaller name', () => {
    expect(ranksAbove({ node: 'b', epoch: 9, lsn: 1 }, { node: 'a', epoch: 5, lsn: 100 })).toBe(true);
    expect(ranksAbove({ node: 'b', epoch: 5, lsn: 101 }, { node: 'a', epoch: 5, lsn: 100 })).toBe(true);
    expect(ranksAbove({ node: 'a', epoch: 5, lsn: 100 }, { node: 'b', epoch: 5, lsn: 100 })).toBe(true);
    expect(ranksAbove({ node: 'b', epoch: 5, lsn: 100 }, { node: 'a', epoch: 5, lsn: 100 })).toBe(false);
  });

  it('defers to a better live follower, never to the old leader or a stale position; a hand-over target first', () => {
    const me = { node: 'b', epoch: 5, lsn: 90 };
    expect(deferTo(me, [pos('b', 5, 90), pos('c', 5, 95)], null, 0)).toBe('c');
    expect(deferTo(me, [pos('c', 5, 80)], null, 0)).toBeNull();
    expect(deferTo(me, [pos('a', 5, 100, { role: 'leader' })], null, 0)).toBeNull();
    expect(deferTo(me, [pos('c', 5, 95, { at: 10 })], null, 500)).toBeNull();
    expect(deferTo(me, [pos('c', 5, 95)], 'd', 0)).toBe('d');
    expect(deferTo(me, [pos('c', 5, 95)], 'b', 0)).toBeNull();
  });
});
