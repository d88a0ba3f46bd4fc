/**
 * Tenant requests and migration polling over whichever server is current: the SIGKILL tests
 * restart it, so every call goes through `current()`.
 */
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function migrationClient(current: () => TestServer) {
  const req = (method: string, p: string, body?: unknown) => current().request(method, `${T}${p}`, { token: TOKEN, ...(body !== undefined ? { body } : {}) });
  const get = async (id: string) => (await req('GET', `/migrations/${id}`)).json;
  /** The migration once `ok` holds for it (polled every 20 ms, at most 60 s). */
  const until = async (id: string, ok: (m: any) => boolean) => {
    const end = Date.now() + 60_000;
    for (;;) {
      const m = await get(id);
      if (ok(m)) return m;
      if (Date.now() > end) throw new Error(`migration stuck: ${JSON.stringify(m)}`);
      await sleep(20);
    }
  };
  return { req, get, until };
}

/** The SIGKILL tests' server: killed, and started again on the same data. */
export interface Restarts {
  kill(): Promise<void>;
  restart(): Promise<void>;
}

/** A server on a fresh data directory that a test may SIGKILL and restart; `c` follows the current one. */
export async function restartable() {
  const dir = TestServer.tempDir();
  const env = bootstrapEnv();
  let srv = await new TestServer(dir, env).start();
  const server: Restarts & { stop(): Promise<void>; current(): TestServer } = {
    kill: () => srv.kill(),
    restart: async () => void (srv = await new TestServer(dir, env).start()),
    stop: () => srv.stop(),
    current: () => srv,
  };
  return { dir, server, c: migrationClient(() => srv) };
}

type Client = ReturnType<typeof migrationClient>;

/**
 * SIGKILL mid-backfill: `writes(first)` runs across the kill; after the restart `writes(second)`
 * runs (dual-written: the mirror is back before any write), then the backfill finishes. Its done
 * counter lives in the batch frames: every row, no batch counted twice or lost.
 */
export async function killMidBackfill(c: Client, s: Restarts, id: string, rows: number, writes: (from: number) => Promise<void>, [first, second]: [number, number]): Promise<void> {
  const before = writes(first);
  const mid = await c.until(id, (m) => m.progress.done > 0);
  expect(mid.progress.done).toBeLessThan(rows);
  await s.kill();
  await before;
  await s.restart();
  await writes(second);
  const ready = await c.until(id, (m) => m.state === 'ReadyToCutover');
  expect(ready.progress.done).toBe(rows);
}

/**
 * SIGKILL while the cutover is under way: after the restart the table is wholly old
 * (ReadyToCutover) or wholly new (Completed), as `seen(after)` may check; a ReadyToCutover one
 * is cut over again. Resolves with the Completed migration.
 */
export async function killMidCutover(c: Client, s: Restarts, id: string, seen?: (after: any) => Promise<void>): Promise<any> {
  const pending = c.req('POST', `/migrations/${id}/cutover`).catch(() => undefined);
  await sleep(5);
  await s.kill();
  await pending;
  await s.restart();
  const after = await c.get(id);
  expect(['ReadyToCutover', 'Completed']).toContain(after.state);
  await seen?.(after);
  if (after.state === 'Completed') return after;
  const cut = (await c.req('POST', `/migrations/${id}/cutover`)).json;
  expect(cut.state).toBe('Completed');
  return cut;
}
