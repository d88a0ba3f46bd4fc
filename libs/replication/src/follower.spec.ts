import type { TenantStore } from '@mmdb/storage';
import { Follower, type FollowerTransport } from './follower';
import type { LeaseRecord } from './lease-store';

/** A store with an empty log: all the follower reads of it before it asks the holder for frames. */
const emptyStore = { lastLsn: 0, epochAt: () => undefined, segments: { framesPerSegment: 16 } } as unknown as TenantStore;
const lease = (holder: string, epoch: number): LeaseRecord => ({ tenant: 'T', holder, epoch, advertise_url: `https://${holder}`, ttl_ms: 5000, acquired_at: 0, expires_at: null });

describe('Follower: reconnecting to a holder that is gone', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  const flush = async () => {
    for (let i = 0; i < 20; i++) await Promise.resolve();
  };

  function refusingTransport(calls: string[]): FollowerTransport {
    return {
      frames: (holder) => ({
        [Symbol.asyncIterator]: () => ({
          next: async () => {
            calls.push(holder.holder);
            throw new Error('connect ECONNREFUSED');
          },
        }),
      }),
      ack: async () => undefined,
    };
  }

  it('backs off between attempts, and a pause (this node is about to lead) ends the backoff at once', async () => {
    const calls: string[] = [];
    const f = new Follower({ node: 'n2', store: emptyStore, transport: refusingTransport(calls) });
    f.follow(lease('n1', 7));
    await flush();
    // 100, 200, 400, 800 ms of backoff: five attempts, then a wait of 1.6 s
    for (const ms of [100, 200, 400, 800]) {
      await jest.advanceTimersByTimeAsync(ms);
      await flush();
    }
    expect(calls.length).toBe(5);
    let paused = false;
    void f.pause().then(() => (paused = true));
    await flush();
    expect(paused).toBe(true); // no timer advanced: the 1.6 s wait did not hold it
    expect(f.following).toBeNull();
    await jest.advanceTimersByTimeAsync(5000);
    expect(calls.length).toBe(5); // and it stopped trying
  });

  it('a new holder ends the backoff: the next attempt goes to it without waiting', async () => {
    const calls: string[] = [];
    const f = new Follower({ node: 'n2', store: emptyStore, transport: refusingTransport(calls) });
    f.follow(lease('n1', 7));
    for (const ms of [100, 200, 400, 800]) {
      await jest.advanceTimersByTimeAsync(ms);
      await flush();
    }
    expect(calls).toEqual(['n1', 'n1', 'n1', 'n1', 'n1']);
    f.follow(lease('n3', 9));
    await flush();
    expect(calls.at(-1)).toBe('n3');
    await f.stop();
  });
});
