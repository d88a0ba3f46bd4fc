import { Readable } from 'stream';
import { DbError } from '@mmdb/core';
import { NdjsonLine, readNdjson } from './ndjson';

const limits = { lineMax: 64, streamMax: 1 << 20 };

/** Feeds `text` in pieces of `piece` bytes, so lines cross chunk boundaries. */
function streamOf(text: string, piece = 7): Readable {
  const buf = Buffer.from(text, 'utf8');
  const parts: Buffer[] = [];
  for (let i = 0; i < buf.length; i += piece) parts.push(buf.subarray(i, i + piece));
  return Readable.from(parts);
}

async function read(text: string, piece?: number, onLine?: (l: NdjsonLine) => void | Promise<void>) {
  const got: NdjsonLine[] = [];
  const r = await readNdjson(streamOf(text, piece), limits, onLine ?? ((l) => void got.push(l)));
  return { got, ...r };
}

describe('readNdjson', () => {
  it('parses lines across chunk boundaries, skips blank and whitespace-only lines, accepts CRLF', async () => {
    const text = '{"a":1}\r\n\n   \n\t\r\n{"b":"é"}\n\u00a0\u2028\n{"c":[1,2]}';
    for (const piece of [1, 3, 7, 1000]) {
      const { got, lines } = await read(text, piece);
      expect(got).toEqual([
        { line: 1, value: { a: 1 } },
        { line: 5, value: { b: 'é' } },
        { line: 7, value: { c: [1, 2] } },
      ]);
      expect(lines).toBe(7);
    }
  });

  it('names the line that is not JSON', async () => {
    const e = await read('{"a":1}\n\n{"a":\n{"a":3}\n').catch((x) => x);
    expect(e).toBeInstanceOf(DbError);
    expect(e.code).toBe('invalid_body');
    expect(e.details.line).toBe(3);
  });

  it('refuses a line over the cap with payload_too_large naming it', async () => {
    const e = await read(`{"a":1}\n{"s":"${'x'.repeat(100)}"}\n`).catch((x) => x);
    expect(e.code).toBe('payload_too_large');
    expect(e.details.line).toBe(2);
  });

  it('waits for a callback that returns a promise before reading on', async () => {
    const order: string[] = [];
    await read('1\n2\n3\n', 1, (l) => {
      order.push(`start ${l.line}`);
      if (l.line === 2) return new Promise<void>((r) => setTimeout(() => (order.push('done 2'), r()), 20));
    });
    expect(order).toEqual(['start 1', 'start 2', 'done 2', 'start 3']);
  });
});
