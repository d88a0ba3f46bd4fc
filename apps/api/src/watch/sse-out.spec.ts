/**
 * A watch stream's output over a real HTTP/1.1 socket: shared chunks written straight to the
 * socket and strings through the response keep their order and their chunked framing (the
 * client's HTTP parser decodes them), and a client that stops reading makes `write` answer
 * false and `drained()` wait until it reads again.
 */
import { createServer, get, type IncomingMessage, type Server, type ServerResponse } from 'http';
import type { AddressInfo } from 'net';
import { SseChunk, sseEvent } from './sse';
import { sseOut } from './sse-out';

describe('sseOut', () => {
  let server: Server;
  let res: ServerResponse;
  let client: IncomingMessage;
  beforeEach(async () => {
    const opened = new Promise<ServerResponse>((resolve) => {
      server = createServer((_req, r) => {
        r.writeHead(200, { 'content-type': 'text/event-stream' });
        resolve(r);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const answered = new Promise<IncomingMessage>((resolve) => get({ host: '127.0.0.1', port, path: '/' }, resolve));
    res = await opened;
    const out = sseOut(res);
    out.write('retry: 100\n\n'); // the headers go out with the first write, through the response
    client = await answered;
  });
  afterEach(async () => {
    client?.destroy();
    await new Promise((r) => server.close(r));
  });

  const readAll = (c: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let text = '';
      c.setEncoding('utf8');
      c.on('data', (d: string) => (text += d));
      c.on('end', () => resolve(text));
      c.resume(); // (a paused stream stays paused when a data listener is added)
    });

  it('interleaves shared chunks and strings in order, framed as chunks the client decodes', async () => {
    const out = sseOut(res);
    const shared = new SseChunk(sseEvent('change', '1:2', { name: 'é' }));
    const body = readAll(client);
    expect(out.write(shared)).toBe(true);
    out.write(': heartbeat\n\n');
    out.write(shared); // the same bytes again, to another stream or this one
    out.end();
    expect(await body).toBe(`retry: 100\n\n${shared.text}: heartbeat\n\n${shared.text}`);
  });

  it('answers false once the socket is full while the client does not read, and drained() waits for it to read', async () => {
    const out = sseOut(res);
    client.pause();
    const big = new SseChunk(sseEvent('change', '1:3', { pad: 'x'.repeat(64 * 1024) }));
    let writes = 0;
    while (out.write(big)) if (++writes > 10_000) throw new Error('the socket never filled');
    expect(out.pendingBytes).toBeGreaterThan(0);
    let drained = false;
    const wait = out.drained().then(() => (drained = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(drained).toBe(false); // the client still does not read
    const body = readAll(client); // reads (resumes) from here on
    await wait;
    out.end();
    const text = await body;
    expect(text.length).toBe('retry: 100\n\n'.length + (writes + 1) * big.text.length);
    expect(text.endsWith(big.text)).toBe(true);
  });
});
