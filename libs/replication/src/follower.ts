/**
 * A follower of one tenant: tails the holder's frames (follow mode), checks their epochs,
 * applies them through the store's one frame applier (`applyFrames`, which verifies every
 * checksum and that each frame continues the log), acknowledges what it applied, and
 * publishes its position for elections. See DESIGN.md ("Followers").
 */
import { performance } from 'perf_hooks';
import { DbError, isDbError } from '@mmdb/core';
import type { TenantStore } from '@mmdb/storage';
import type { FramesLine, FramesQuery } from './frames';
import type { LeaseRecord } from './lease-store';

/** How a follower reaches the holder (apps/api fills it with an HTTPS client). */
export interface FollowerTransport {
  /** The holder's frames stream; yields the lines as they arrive, a chunk at a time. Errors from the holder are DbErrors with its code. */
  frames(holder: LeaseRecord, q: FramesQuery): AsyncIterable<FramesLine[]>;
  /** Reports `{follower, lsn, epoch}` to the holder. */
  ack(holder: LeaseRecord, body: { follower: string; lsn: number; epoch: number }): Promise<void>;
  /**
   * Optional: one long-lived acknowledgement channel to the holder (each `send` goes out at
   * once, with no round trip of its own). `onClosed` runs when the channel ends by itself (an
   * error, the holder answered); the follower then falls back to `ack` and opens another later.
   */
  ackStream?(holder: LeaseRecord, onClosed: () => void): AckChannel;
}

/** An open acknowledgement channel (FollowerTransport.ackStream). */
export interface AckChannel {
  /** Queues one acknowledgement; false when the channel has ended (send it another way). */
  send(body: { follower: string; lsn: number; epoch: number }): boolean;
  close(): void;
}

export interface FollowerOptions {
  readonly node: string;
  readonly store: TenantStore;
  readonly transport: FollowerTransport;
  /** Called after each applied batch (publish the position, count frames). */
  onApplied?(frames: number, lsn: number): void;
  /** A frame's epoch, to fence this node if it ever held an older lease. */
  observeEpoch?(epoch: number): void;
  /** The holder says this log cannot continue from it (diverged, ahead, or dropped): bootstrap from a snapshot. */
  onResync?(holder: LeaseRecord, error: DbError): Promise<void>;
  readonly log?: (m: string) => void;
}

/** Lines read ahead of the applier before the stream is left unread (backpressure). */
const MAX_QUEUED = 8192;

export class Follower {
  /** The holder being followed (null: none). */
  private target: LeaseRecord | null = null;
  private loop: Promise<void> | null = null;
  private abort: (() => void) | null = null;
  /** Ends the retry backoff early (a new holder to follow, a pause, a stop). */
  private nudge: (() => void) | null = null;
  private stopped = false;
  /** The holder's last LSN as last heard (start line or heartbeat), and when. */
  holderLastLsn = 0;
  /** performance.now() when the holder last sent anything (a line of its stream); 0: never. */
  lastHeard = 0;
  private caughtUpAt = 0;
  lastError: string | null = null;

  constructor(private readonly o: FollowerOptions) {}

  get following(): string | null {
    return this.target?.holder ?? null;
  }

  /** Frames behind the holder as last heard. */
  get lagFrames(): number {
    return Math.max(0, this.holderLastLsn - this.o.store.lastLsn);
  }

  /** Seconds since this follower was last caught up with the holder (0 when it is). */
  get lagSeconds(): number {
    if (!this.target || this.lagFrames === 0) return 0;
    return Math.max(0, (performance.now() - this.caughtUpAt) / 1000);
  }

  /** Follows `lease`'s holder (restarting the tail when the holder or epoch changed), or stops following (null). */
  follow(lease: LeaseRecord | null): void {
    const same = this.target && lease && this.target.holder === lease.holder && this.target.epoch === lease.epoch;
    if (same) {
      this.target = lease;
      return;
    }
    this.target = lease;
    this.abort?.();
    this.nudge?.();
    if (lease && !this.loop && !this.stopped) {
      this.loop = this.run().finally(() => {
        this.loop = null;
        if (this.target && !this.stopped) this.follow(this.target);
      });
    }
  }

  /** Stops tailing and waits until no apply is running (before this node starts writing). */
  async pause(): Promise<void> {
    this.target = null;
    this.abort?.();
    this.nudge?.();
    await this.loop;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.target = null;
    this.abort?.();
    this.nudge?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    let backoff = 100;
    while (this.target && !this.stopped) {
      const holder = this.target;
      try {
        await this.tail(holder);
        backoff = 100;
      } catch (e) {
        if (this.target !== holder || this.stopped) continue;
        this.lastError = (e as Error).message;
        if (isDbError(e) && (e.code === 'resync_required' || e.code === 'stale_epoch')) {
          this.o.log?.(`following ${holder.holder}: ${e.message}`);
          if (this.o.onResync) {
            await this.o.onResync(holder, e).catch((x: unknown) => {
              this.lastError = `bootstrap failed: ${(x as Error).message}`;
              this.o.log?.(this.lastError);
            });
          }
        }
        // The backoff ends early when the target changes: a failover must not wait on it.
        await new Promise<void>((r) => {
          const t = setTimeout(r, backoff);
          this.nudge = () => {
            clearTimeout(t);
            r();
          };
        });
        this.nudge = null;
        backoff = Math.min(2000, backoff * 2);
      }
    }
  }

  /**
   * One connection to the holder: tail until it ends, fails, or the target changes. The
   * stream is read by its own loop into a queue while the applier works, and the applier takes
   * everything queued at once: one `applyFrames` (one durable batch) and one acknowledgement
   * cover every frame that arrived during the previous apply, so the follower's fsyncs and
   * acknowledgements grow with its load instead of the holder's commits waiting on one each.
   */
  private async tail(holder: LeaseRecord): Promise<void> {
    const store = this.o.store;
    const lsn = store.lastLsn;
    const epoch = lsn > 0 ? (store.epochAt(lsn) ?? 0) : 0;
    const size = store.segments.framesPerSegment;
    const aborted = new Promise<'abort'>((r) => (this.abort = () => r('abort')));
    const it = this.o.transport.frames(holder, { sinceSegment: Math.floor(lsn / size), afterLsn: lsn, epoch, follow: true, follower: this.o.node })[Symbol.asyncIterator]();
    const queue: FramesLine[] = [];
    // Set from inside the promises below (an object, so the compiler does not narrow them to null).
    const sig: { wake: (() => void) | null; drained: (() => void) | null } = { wake: null, drained: null };
    let done = false;
    let failure: unknown = null;
    const pump = (async () => {
      try {
        for (;;) {
          const r = await it.next();
          if (r.done || done) break;
          this.lastHeard = performance.now();
          for (const line of r.value) queue.push(line);
          sig.wake?.();
          // Backpressure: the socket is not read further while this much waits to be applied.
          while (queue.length > MAX_QUEUED && !done) await new Promise<void>((d) => (sig.drained = d));
        }
      } catch (e) {
        failure = e;
      } finally {
        done = true;
        sig.wake?.();
      }
    })();
    let acking: Promise<void> = Promise.resolve();
    let pendingAck: { lsn: number; epoch: number } | null = null;
    let lastAck: { lsn: number; epoch: number } | null = null;
    // One acknowledgement in flight at a time, naming the highest durable LSN; those due meanwhile collapse into the latest.
    const post = (a: { lsn: number; epoch: number }): void => {
      const wasIdle = pendingAck === null;
      pendingAck = a;
      if (!wasIdle) return;
      acking = (async () => {
        while (pendingAck) {
          const next: { lsn: number; epoch: number } = pendingAck;
          await this.o.transport.ack(holder, { follower: this.o.node, ...next }).catch(() => undefined);
          if (pendingAck === next) pendingAck = null;
        }
      })();
    };
    // The channel, when the transport has one: reopened at most once a second after it ends; the
    // acknowledgement it may have lost goes by `post` meanwhile.
    let channel: AckChannel | null = null;
    let channelAt = 0;
    const openChannel = (): AckChannel | null => {
      if (!this.o.transport.ackStream || performance.now() - channelAt < 1000) return null;
      channelAt = performance.now();
      const ch: AckChannel = this.o.transport.ackStream(holder, () => {
        if (channel === ch) channel = null;
        if (lastAck && this.target === holder) post(lastAck);
      });
      return ch;
    };
    const acknowledge = (a: { lsn: number; epoch: number }): void => {
      lastAck = a;
      channel ??= openChannel();
      if (!channel?.send({ follower: this.o.node, ...a })) post(a);
    };
    try {
      while (this.target === holder && !this.stopped) {
        if (!queue.length) {
          if (done) {
            if (failure) throw failure;
            return;
          }
          const got = await Promise.race([new Promise<void>((r) => (sig.wake = r)), aborted]);
          sig.wake = null;
          if (got === 'abort') return;
          continue;
        }
        const lines = queue.splice(0);
        sig.drained?.();
        sig.drained = null;
        const frames: Buffer[] = [];
        let ended = false;
        let lastEpoch = store.lastLsn > 0 ? (store.epochAt(store.lastLsn) ?? 0) : 0;
        for (const line of lines) {
          if (line.type === 'frame') {
            if (line.epoch < lastEpoch) throw new DbError('resync_required', `frame ${line.lsn} has epoch ${line.epoch}, below the epoch ${lastEpoch} before it`, { reason: 'epoch' });
            if (line.epoch > holder.epoch && holder.epoch > 0) throw new Error(`frame ${line.lsn} has epoch ${line.epoch}, above its holder's lease epoch ${holder.epoch}: the lease moved`);
            lastEpoch = line.epoch;
            frames.push(Buffer.from(line.hex, 'hex'));
          } else if (line.type === 'end') ended = true;
          else this.holderLastLsn = line.last_lsn;
        }
        if (frames.length) {
          const { lastLsn } = await store.applyFrames(frames);
          this.o.observeEpoch?.(lastEpoch);
          this.o.onApplied?.(frames.length, lastLsn);
          this.holderLastLsn = Math.max(this.holderLastLsn, lastLsn);
          acknowledge({ lsn: lastLsn, epoch: lastEpoch });
        }
        if (store.lastLsn >= this.holderLastLsn) this.caughtUpAt = performance.now();
        this.lastError = null;
        if (ended) return;
      }
    } finally {
      // Not awaited: an acknowledgement to a holder that just died must not hold up a failover.
      this.abort = null;
      const ch = channel as AckChannel | null;
      channel = null;
      ch?.close();
      done = true;
      sig.drained?.();
      void it.return?.();
      void pump;
      void acking;
    }
  }

  /** ms since the holder was last heard from (start line, heartbeat). */
  get silentMs(): number {
    return this.lastHeard ? performance.now() - this.lastHeard : Infinity;
  }
}
