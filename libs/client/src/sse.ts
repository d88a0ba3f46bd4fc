/**
 * A text/event-stream parser (the WHATWG rules: `event`, `data` (joined by newlines), `id`,
 * `retry`, comments, CR/LF/CRLF line ends) and the reconnecting watch iterator.
 */
import { MmdbError } from './errors';

export interface SseEvent {
  readonly id: string | undefined;
  readonly event: string;
  readonly data: string;
  /** `retry:` field: the server's reconnection delay in ms. */
  readonly retry?: number;
}

/** Parses a byte stream into events. */
export async function* parseSse(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const dec = new TextDecoder();
  let buf = '';
  let data: string[] = [];
  let event = '';
  let id: string | undefined;
  let retry: number | undefined;
  let hasId = false;
  const dispatch = (): SseEvent | undefined => {
    const out = data.length ? { id: hasId ? id : undefined, event: event || 'message', data: data.join('\n'), ...(retry !== undefined ? { retry } : {}) } : undefined;
    data = [];
    event = '';
    hasId = false;
    retry = undefined;
    return out;
  };
  const line = (l: string): SseEvent | undefined => {
    if (l === '') return dispatch();
    if (l.startsWith(':')) return undefined;
    const i = l.indexOf(':');
    const field = i < 0 ? l : l.slice(0, i);
    let value = i < 0 ? '' : l.slice(i + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id' && !value.includes('\0')) {
      id = value;
      hasId = true;
    } else if (field === 'retry' && /^\d+$/.test(value)) retry = Number(value);
    return undefined;
  };
  for await (const chunk of chunks) {
    buf += dec.decode(chunk, { stream: true });
    for (;;) {
      const m = /\r\n|\r|\n/.exec(buf);
      // a lone CR at the end may be the first half of CRLF: wait for more
      if (!m || (m[0] === '\r' && m.index === buf.length - 1)) break;
      const ev = line(buf.slice(0, m.index));
      buf = buf.slice(m.index + m[0].length);
      if (ev) yield ev;
    }
  }
}

/** Orders event ids: numeric ids (LSNs, `epoch-lsn` pairs) compare as numbers, others only by equality. */
export function idAfter(id: string, last: string | undefined): boolean {
  if (last === undefined) return true;
  const a = numericKey(id);
  const b = numericKey(last);
  if (a && b) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const x = a[i] ?? 0n;
      const y = b[i] ?? 0n;
      if (x !== y) return x > y;
    }
    return false;
  }
  return id !== last;
}

function numericKey(id: string): bigint[] | undefined {
  if (!/^\d+([-.:/]\d+)*$/.test(id)) return undefined;
  return id.split(/[-.:/]/).map((s) => BigInt(s));
}

export interface WatchOptions {
  /** Resume after this event id (e.g. one saved from an earlier run). */
  readonly lastEventId?: string;
  readonly signal?: AbortSignal;
  /** Most reconnections in a row without a successful connection before giving up (default 10). */
  readonly maxReconnects?: number;
}

export type Connect = (lastEventId: string | undefined, signal: AbortSignal) => Promise<AsyncIterable<Uint8Array>>;

const BACKOFF = [250, 500, 1000, 2000, 4000];

/**
 * Yields events, reconnecting (with Last-Event-ID) when the stream ends or fails, and never
 * yields an event whose id is not after the last one yielded. 4xx answers (but 429) end it.
 */
export async function* watchEvents(connect: Connect, opts: WatchOptions = {}): AsyncGenerator<SseEvent> {
  let last = opts.lastEventId;
  let failures = 0;
  let serverRetry: number | undefined;
  const ctl = new AbortController();
  const onAbort = () => ctl.abort(opts.signal!.reason);
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    while (!ctl.signal.aborted) {
      try {
        const stream = await connect(last, ctl.signal);
        failures = 0;
        for await (const ev of parseSse(stream)) {
          if (ev.retry !== undefined) serverRetry = ev.retry;
          if (ev.id !== undefined) {
            if (!idAfter(ev.id, last)) continue; // already delivered before a reconnect
            last = ev.id;
          }
          if (ev.event === 'heartbeat' || (ev.data === '' && ev.event === 'message')) continue;
          yield ev;
        }
      } catch (e) {
        if (ctl.signal.aborted) return;
        if (e instanceof MmdbError && e.status >= 400 && e.status < 500 && e.status !== 429) throw e;
        if (++failures > (opts.maxReconnects ?? 10)) throw e;
      }
      if (ctl.signal.aborted) return;
      // a clean end and the first failure wait 0.25 s; each further failure in a row doubles it (cap 4 s)
      const delay = serverRetry ?? BACKOFF[Math.min(Math.max(failures - 1, 0), BACKOFF.length - 1)];
      await new Promise<void>((r) => {
        const wake = () => (clearTimeout(timer), r());
        const timer = setTimeout(() => (ctl.signal.removeEventListener('abort', wake), r()), delay);
        ctl.signal.addEventListener('abort', wake, { once: true });
      });
    }
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
    ctl.abort();
  }
}
