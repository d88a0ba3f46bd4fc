/**
 * Crash test through HTTP: concurrent clients write with Idempotency-Keys, the server is
 * killed with SIGKILL mid-stream, restarted on the same data directory, and every request
 * whose answer was lost is sent again with the same key and body. Afterwards every row
 * exists exactly once at the version its history implies (a write applied twice would
 * show as one version too many; an insert applied twice as a 409).
 */
import { TENANT, TestServer, TOKEN, OPERATOR } from './server';

const TOML = `namespace = "crash"
table = "rows"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "n"
ty = "i64"
required = true
`;

const CLIENTS = 8;
const ROWS_PER_CLIENT = 30;
const OPS = 3; // POST ?expect=insert n=1, then PUT n=2, PUT n=3 (no If-Match: a duplicate would bump the version)

function keyFor(row: number, op: number): string {
  return `01J${String(row).padStart(12, '0')}${String(op).padStart(11, '0')}`;
}

describe('crash through HTTP: SIGKILL, restart, resend lost answers', () => {
  it('keeps every acknowledged write and applies every retried one exactly once', async () => {
    const dir = TestServer.tempDir();
    const env = { DB_BOOTSTRAP_TENANT: TENANT, DB_BOOTSTRAP_TOKEN: TOKEN, DB_OPERATOR_TOKEN: OPERATOR }; // durable (sync) commits
    let srv = await new TestServer(dir, env).start();
    const T = `/v1/tenants/${TENANT}`;
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: TOML, contentType: 'text/plain' })).status).toBe(200);

    const next = new Array<number>(CLIENTS * ROWS_PER_CLIENT).fill(0); // next op per row
    let acked = 0;
    let lost = 0;
    const send = (row: number, op: number) => {
      const h = { token: TOKEN, headers: { 'idempotency-key': keyFor(row, op) } };
      return op === 0
        ? srv.request('POST', `${T}/rows/crash.rows?expect=insert`, { ...h, body: { id: row, n: 1 } })
        : srv.request('PUT', `${T}/rows/crash.rows/${row}`, { ...h, body: { n: op + 1 } });
    };
    const client = async (c: number, stopOnError: boolean) => {
      for (let i = 0; i < ROWS_PER_CLIENT; i++) {
        const row = c * ROWS_PER_CLIENT + i;
        while (next[row] < OPS) {
          let r;
          try {
            r = await send(row, next[row]);
          } catch (e) {
            if (!stopOnError) throw e;
            lost++;
            return; // the answer is lost: this op is resent after the restart
          }
          expect([r.status, r.json?.error]).toEqual([200, undefined]);
          expect(r.json.version).toBe(next[row] + 1);
          next[row]++;
          acked++;
        }
      }
    };

    const running = Array.from({ length: CLIENTS }, (_, c) => client(c, true));
    const total = CLIENTS * ROWS_PER_CLIENT * OPS;
    while (acked < total / 3) await new Promise((r) => setTimeout(r, 5));
    await srv.kill();
    await Promise.all(running);
    expect(lost).toBeGreaterThan(0);
    expect(acked).toBeLessThan(total);

    srv = await new TestServer(dir, env).start();
    try {
      await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c, false)));
      expect(acked).toBe(total);
      for (let row = 0; row < CLIENTS * ROWS_PER_CLIENT; row++) {
        const g = await srv.request('GET', `${T}/rows/crash.rows/${row}`, { token: TOKEN });
        expect([row, g.status, g.headers.etag, g.json]).toEqual([row, 200, `"${OPS}"`, { id: row, n: OPS }]);
      }
      // A replay after the restart still answers from the stored record.
      const again = await send(0, 0);
      expect([again.status, again.headers['x-db-idempotent-replay']]).toEqual([200, 'true']);
    } finally {
      await srv.stop();
    }
  });
});
