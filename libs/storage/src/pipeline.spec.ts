/**
 * The writer's pipeline (DESIGN.md, "The path of a write", step 2): while a group's batch is
 * written, requests that arrive are prepared at once into the next group, on top of the group
 * in flight; that group's batch is issued the moment the flight is durable, before the flight
 * is applied and answered. A flight that fails takes what was prepared on it down with it.
 * The batch writes are held open here (a slow fsync), on a real store.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { DbError } from '@mmdb/core';
import { KV_TOML as T } from '../test/kv-schema';
import type { CommitRequest, CommitResult } from './api';
import type { CommitTrace } from './coordinator';
import { TenantStore } from './store';

interface Internals {
  coordinator: {
    trace: ((t: CommitTrace) => void) | null;
    stats: { groups: number };
    queue: unknown[];
    wake: (() => void) | null;
    submit(req: CommitRequest): Promise<CommitResult>;
  };
  db: { batch(): { write(o?: object): Promise<void> } };
}

const turn = () => new Promise<void>((r) => setImmediate(r));

describe('the writer pipeline', () => {
  let dir: string;
  let store: TenantStore;
  let traces: CommitTrace[];
  /** While set, every batch write waits for it (then writes, or fails with it). */
  let hold: Promise<void> | null;
  let held: number;
  let release: (fail?: Error) => void;
  /** Requests the coordinator was given so far. */
  let submitted: number;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pipeline-'));
    store = await TenantStore.open({ dir });
    await store.registerSchema(T);
    const s = store as unknown as Internals;
    traces = [];
    s.coordinator.trace = (t) => traces.push(t);
    submitted = 0;
    const submit = s.coordinator.submit.bind(s.coordinator);
    s.coordinator.submit = (r) => {
      submitted++;
      return submit(r);
    };
    hold = null;
    held = 0;
    const batch = s.db.batch.bind(s.db);
    s.db.batch = () => {
      const b = batch();
      const write = b.write.bind(b);
      b.write = async (o?: object) => {
        if (hold) {
          held++;
          await hold;
        }
        return write(o);
      };
      return b;
    };
  });
  afterEach(async () => {
    release?.();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const holdWrites = () => {
    let open!: () => void;
    let fail!: (e: Error) => void;
    hold = new Promise<void>((res, rej) => ((open = res), (fail = rej)));
    hold.catch(() => undefined);
    release = (e?: Error) => {
      hold = null;
      if (e) fail(e);
      else open();
    };
  };
  const put = (k: number, v: string, version?: number) =>
    store.commit({ changes: [{ op: 'put', schema: 't.kv', row: { k, v }, ...(version !== undefined ? { precondition: { kind: 'if_match' as const, version } } : {}) }] });
  async function until(cond: () => boolean): Promise<void> {
    while (!cond()) await new Promise((r) => setTimeout(r, 1));
  }
  /** Until `n` requests were submitted (a commit may first wait for the store's disk check) and the writer waits for its flight with nothing queued. */
  async function preparedOnFlight(n: number): Promise<void> {
    const c = (store as unknown as Internals).coordinator;
    await until(() => submitted === n && c.queue.length === 0 && c.wake !== null);
  }

  it('prepares requests arriving during a write on top of it, in one next group issued before the flight is answered', async () => {
    await put(1, 'a');
    traces = [];
    submitted = 0;
    holdWrites();
    const first = put(1, 'b', 1); // version 1 → 2, its batch held
    await until(() => held === 1);
    // Ten requests (more than a chunk); two read the row the flight writes.
    const next: Array<Promise<CommitResult>> = [put(1, 'c', 2), put(1, 'd', 3)];
    for (let i = 2; i < 10; i++) next.push(put(100 + i, `n${i}`));
    await preparedOnFlight(11);
    expect(held).toBe(1); // nothing else was issued while the flight is held
    const groupsBefore = (store as unknown as Internals).coordinator.stats.groups;
    release();
    const r = await Promise.all([first, ...next]);
    expect(r[0].results[0]).toMatchObject({ version: 2 });
    expect(r[1].results[0]).toMatchObject({ version: 3 });
    expect(r[2].results[0]).toMatchObject({ version: 4 });
    expect((await store.getRow('t.kv', [1]))?.values.v).toBe('d');
    // One group for the flight, one for all ten.
    expect((store as unknown as Internals).coordinator.stats.groups - groupsBefore).toBe(2);
    const [f, ...rest] = traces.filter((t) => t.issued !== undefined).sort((a, b) => a.at - b.at);
    expect(new Set(rest.map((t) => t.issued)).size).toBe(1);
    for (const t of rest) {
      // prepared while the flight was still being written, issued before the flight was answered
      expect(t.prepared!).toBeLessThanOrEqual(f.written!);
      expect(t.issued!).toBeLessThanOrEqual(f.resolved);
    }
    expect((await store.verify()).ok).toBe(true);
  });

  it('requests fewer than a chunk, arriving over several turns, wait for the flight to land and join the same next group', async () => {
    traces = [];
    submitted = 0;
    holdWrites();
    const first = put(1, 'a');
    await until(() => held === 1);
    const next: Array<Promise<CommitResult>> = [];
    for (let i = 0; i < 8; i++) next.push(put(10 + i, 'x'));
    await preparedOnFlight(9);
    for (let i = 0; i < 3; i++) {
      next.push(put(20 + i, 'y'));
      await turn();
    }
    await until(() => submitted === 12);
    for (let i = 0; i < 5; i++) await turn();
    const c = (store as unknown as Internals).coordinator;
    expect(c.queue.length).toBe(3); // not prepared yet: under a chunk
    const groupsBefore = c.stats.groups;
    release();
    await Promise.all([first, ...next]);
    expect(c.stats.groups - groupsBefore).toBe(2);
    const [f, ...rest] = traces.filter((t) => t.issued !== undefined).sort((a, b) => a.at - b.at);
    expect(rest).toHaveLength(11);
    expect(new Set(rest.map((t) => t.issued)).size).toBe(1);
    for (const t of rest.slice(8)) expect(t.prepared!).toBeGreaterThanOrEqual(f.written!);
    expect((await store.verify()).ok).toBe(true);
  });

  it('rejects what was prepared on a flight whose write fails, and writes on after it', async () => {
    await put(1, 'a');
    const lsn = store.lastLsn;
    submitted = 0;
    holdWrites();
    const first = put(2, 'x');
    await until(() => held === 1);
    // a chunk: prepared on the flight while it is written
    const next = [put(1, 'y', 1)];
    for (let k = 3; k < 10; k++) next.push(put(k, 'z'));
    await preparedOnFlight(9);
    release(new Error('simulated write failure'));
    await expect(first).rejects.toBeInstanceOf(DbError);
    for (const p of next) await expect(p).rejects.toMatchObject({ code: 'service_unavailable' });
    expect(store.lastLsn).toBe(lsn);
    expect(await store.getRow('t.kv', [2])).toBeUndefined();
    for (let k = 3; k < 10; k++) expect(await store.getRow('t.kv', [k])).toBeUndefined();
    // The log goes on at the next LSN, the row at its version.
    const r = await put(1, 'w', 1);
    expect(r.lsn).toBe(lsn + 1);
    expect(r.results[0]).toMatchObject({ version: 2 });
    expect((await store.verify()).ok).toBe(true);
  });
});
