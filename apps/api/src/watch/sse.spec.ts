import { formatId, parseId, SseChunk, sseComment, sseEvent } from './sse';

describe('watch SSE ids and framing', () => {
  const epochOf = (lsn: number) => (lsn >= 100 ? 2 : lsn >= 1 ? 1 : undefined);

  it('formats EPOCH:LSN and reads it back; a bare LSN takes the epoch the log recorded for it', () => {
    expect(formatId({ epoch: 3, lsn: 42 })).toBe('3:42');
    expect(parseId('3:42', 'since', epochOf)).toEqual({ epoch: 3, lsn: 42 });
    expect(parseId(' 150 ', 'since', epochOf)).toEqual({ epoch: 2, lsn: 150 });
    expect(parseId('7', 'since', epochOf)).toEqual({ epoch: 1, lsn: 7 });
    expect(parseId('0', 'since', epochOf)).toEqual({ epoch: 0, lsn: 0 });
  });

  it('refuses anything else with validation_failed naming the source', () => {
    for (const bad of ['', 'x', '1:2:3', '-1', '1.5', ':4', '9999999999999999']) {
      expect(() => parseId(bad, 'Last-Event-ID', epochOf)).toThrow(expect.objectContaining({ code: 'validation_failed', details: { field: 'Last-Event-ID' } }));
    }
  });

  it('frames an event as id, event and one data line, and a comment', () => {
    expect(sseEvent('change', '1:2', { a: 'x\ny' })).toBe('id: 1:2\nevent: change\ndata: {"a":"x\\ny"}\n\n');
    expect(sseEvent('error', null, {})).toBe('event: error\ndata: {}\n\n');
    expect(sseComment('heartbeat')).toBe(': heartbeat\n\n');
    expect(sseEvent('change', '1:3', { key: [9007199254740993n] })).toBe('id: 1:3\nevent: change\ndata: {"key":[9007199254740993]}\n\n');
  });

  it('an event shared by many streams: its UTF-8 bytes and its HTTP/1.1 chunk made once, the bytes a view of the chunk', () => {
    const text = sseEvent('change', '1:7', { name: 'café ☕' });
    const c = new SseChunk(text);
    const n = Buffer.byteLength(text);
    expect(n).toBeGreaterThan(text.length); // multi-byte characters: the size is in bytes
    expect(c.chunked.toString('utf8')).toBe(`${n.toString(16)}\r\n${text}\r\n`);
    expect(c.bytes.toString('utf8')).toBe(text);
    expect(c.bytes.buffer).toBe(c.chunked.buffer); // no second copy
    expect(c.chunked).toBe(c.chunked); // made once
    expect(`${c}`).toBe(text);
  });
});
