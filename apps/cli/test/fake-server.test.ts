/**
 * migrate, ask and watch run in process against a local server scripted with the real routes'
 * shapes, for what the real server cannot be made to do on cue (an exact progress sequence, a
 * stream that drops and replays). Output goes to sinks that say they are terminals, so the
 * migration progress bar is drawn. The same commands against the real server, in a pty:
 * apps/api/test/cli.test.ts.
 */
import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { Writable } from 'stream';
import type { AddressInfo } from 'net';
import { program } from '../src/program';

class Sink extends Writable {
  text = '';
  isTTY = true;
  columns = 120;
  override _write(chunk: Buffer, _enc: string, cb: () => void): void {
    this.text += chunk.toString();
    cb();
  }
}

type Handler = (req: http.IncomingMessage, body: string, res: http.ServerResponse) => void;
let server: http.Server;
let url = '';
let handler: Handler;
const seen: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push(`${req.method} ${req.url}`);
      handler(req, body, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});
beforeEach(() => {
  seen.length = 0;
  process.exitCode = 0;
});
afterEach(() => {
  process.exitCode = 0;
});

const json = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

async function mmdb(...args: string[]): Promise<{ out: string; err: string; code: number }> {
  const out = new Sink();
  const err = new Sink();
  const env = { MMDB_URL: url, MMDB_TOKEN: 'tok', MMDB_TENANT: 'T1', MMDB_CONFIG: path.join(os.tmpdir(), 'none.toml') };
  await program({ out, err, env }, process.stdin, '0.0.0').parseAsync(['node', 'mmdb', ...args]);
  return { out: out.text, err: err.text, code: Number(process.exitCode ?? 0) };
}

test('migrate submit follows progress with a bar until ReadyToCutover, then cuts over', async () => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-mig-')), 'target.toml');
  const toml = 'namespace = "a"\ntable = "b"\n';
  fs.writeFileSync(file, toml);
  const mig = (state: string, done: number, rate: number, eta_s: number | null) => ({ id: 'M1', schema: 'a.b', state, progress: { done, total: 100, rate, eta_s } });
  const states = [mig('Backfilling', 0, 0, null), mig('Backfilling', 60, 40.4, 1), mig('ReadyToCutover', 100, 50, 0)];
  let submitted = '';
  handler = (req, body, res) => {
    if (req.method === 'POST' && req.url === '/v1/tenants/T1/migrations') {
      submitted = body;
      return json(res, 201, mig('Pending', 0, 0, null));
    }
    if (req.method === 'GET' && req.url === '/v1/tenants/T1/migrations/M1') return json(res, 200, states.shift() ?? mig('ReadyToCutover', 100, 50, 0));
    if (req.method === 'POST' && req.url === '/v1/tenants/T1/migrations/M1/cutover') return json(res, 200, { id: 'M1', state: 'Completed' });
    json(res, 404, { error: 'not_found', message: 'no' });
  };
  const r = await mmdb('migrate', 'submit', file, '--cutover', '--poll', '150');
  expect(r.code).toBe(0);
  // the schema comes from the manifest's namespace and table
  expect(JSON.parse(submitted)).toEqual({ schema: 'a.b', manifest: toml });
  expect(r.err).toContain('migration M1: Pending');
  expect(r.err).toMatch(/migrate \|[█░=-]+\| 60% \| 60\/100 rows \| 40 rows\/s \| ETA 1s \| Backfilling/);
  expect(r.err).toMatch(/100% \| 100\/100 rows \| 50 rows\/s \| ETA 0s \| ReadyToCutover/);
  expect(JSON.parse(r.out)).toEqual({ id: 'M1', state: 'Completed' });
  expect(seen.filter((s) => s.startsWith('POST'))).toHaveLength(2);
});

test('migrate cutover in the wrong state prints the 409 and exits 1; abort prints the migration', async () => {
  handler = (req, _b, res) =>
    req.url!.endsWith('/cutover') ? json(res, 409, { error: 'conflict', message: 'migration M2 is Backfilling, not ReadyToCutover', request_id: 'R9', retry: false }) : json(res, 200, { id: 'M2', state: 'Aborted' });
  const bad = await mmdb('migrate', 'cutover', 'M2');
  expect(bad.code).toBe(1);
  expect(bad.err).toBe('error: conflict: migration M2 is Backfilling, not ReadyToCutover (request R9)\n');
  const ok = await mmdb('migrate', 'abort', 'M2');
  expect(JSON.parse(ok.out)).toEqual({ id: 'M2', state: 'Aborted' });
  expect(seen).toEqual(['POST /v1/tenants/T1/migrations/M2/cutover', 'POST /v1/tenants/T1/migrations/M2/abort']);
});

test('ask prints the rows aligned, the interpretation and the cache state', async () => {
  handler = (_req, body, res) => {
    expect(JSON.parse(body)).toEqual({ nl: 'who follows ann', direction: 'reverse' });
    json(res, 200, { rows: [{ name: 'bob', n: 2 }], cache: 'miss', interpretation: 'people who follow ann' });
  };
  const r = await mmdb('ask', 'who follows ann', '--direction', 'reverse');
  expect(r.out).toBe(' name | n\n------+---\n bob  | 2\n(1 row)\n');
  expect(r.err).toBe('people who follow ann\n(plan cache: miss)\n');
});

test('watch prints one JSON line per event and resumes with Last-Event-ID without repeats', async () => {
  let n = 0;
  handler = (req, _b, res) => {
    n++;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (n === 1) res.end('retry: 5\n\nid: 1\ndata: {"a":1}\n\nid: 2\ndata: {"a":2}\n\n');
    else {
      expect(req.headers['last-event-id']).toBe('2');
      res.end('id: 2\ndata: {"a":2}\n\nid: 3\nevent: change\ndata: {"a":3}\n\n');
    }
  };
  const r = await mmdb('watch', 'new rows', '--limit', '3');
  expect(r.out.trim().split('\n').map((l) => JSON.parse(l))).toEqual([
    { id: '1', event: 'message', data: { a: 1 } },
    { id: '2', event: 'message', data: { a: 2 } },
    { id: '3', event: 'change', data: { a: 3 } },
  ]);
});
