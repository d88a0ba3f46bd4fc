import { AckTracker } from './acks';

describe('AckTracker', () => {
  it('resolves a wait once n followers are at or past the LSN, and false after the window', async () => {
    const t = new AckTracker(60_000);
    const w = t.waitFor(10, 2, 5000);
    t.ack('a', 12, 3);
    t.ack('b', 9, 3);
    let done: boolean | undefined;
    void w.then((v) => (done = v));
    await Promise.resolve();
    expect(done).toBeUndefined();
    t.ack('b', 10, 3);
    expect(await w).toBe(true);
    expect(await t.waitFor(20, 1, 20)).toBe(false);
    expect(await t.waitFor(5, 0, 20)).toBe(true);
  });

  it('moves forward only within an epoch, forgets followers silent past the retention, and clear ends waits', async () => {
    const t = new AckTracker(1000);
    t.ack('a', 50, 3, 0);
    t.ack('a', 40, 3, 10);
    expect(t.list(20).map((a) => a.lsn)).toEqual([50]);
    t.ack('a', 40, 4, 30); // a new epoch: the follower re-synced
    expect(t.list(40).map((a) => a.lsn)).toEqual([40]);
    expect(t.count(40, 2000)).toBe(0); // silent for more than the retention
    const w = t.waitFor(100, 1, 10_000);
    t.clear();
    expect(await w).toBe(false);
  });
});
