/**
 * Issue 25 §4: a body over the 8 MiB cap from a client that writes the whole body before it reads
 * (Python's http.client and requests do) gets the JSON 413, not a connection reset: the server
 * reads and discards the rest of the body (up to a bound) before it closes.
 */
import * as tls from 'tls';
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

describe('413 to a client that writes the whole body first', () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv({ DB_SYNC: '0' })).start();
  });
  afterAll(async () => {
    await srv.stop();
  });

  /** Writes headers and the whole body, waits until all of it is written, only then reads. */
  function writeAllThenRead(bytes: number): Promise<string> {
    return new Promise((resolve, reject) => {
      const sock = tls.connect({ host: '127.0.0.1', port: srv.port, ca: srv.ca, servername: 'localhost' }, async () => {
        sock.pause(); // read nothing until the body is out
        const body = Buffer.alloc(bytes, 0x20);
        body[0] = 0x7b; // '{' then spaces: JSON that is only too large
        sock.write(`POST /v1/tenants/${TENANT}/sql HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer ${TOKEN}\r\ncontent-type: application/json\r\ncontent-length: ${bytes}\r\n\r\n`);
        for (let off = 0; off < bytes; off += 1 << 16) {
          if (!sock.write(body.subarray(off, off + (1 << 16)))) await new Promise((r) => sock.once('drain', r));
        }
        const chunks: Buffer[] = [];
        sock.on('data', (c) => chunks.push(c));
        sock.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        sock.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
        sock.resume();
      });
      sock.on('error', reject);
    });
  }

  it('gets the JSON 413 payload_too_large, for a body of 12 MiB', async () => {
    const text = await writeAllThenRead(12 * 1024 * 1024);
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    const json = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
    expect(json).toMatchObject({ error: 'payload_too_large' });
  });

  it('the server still answers afterwards', async () => {
    expect((await srv.request('GET', '/health')).status).toBe(200);
  });
});
