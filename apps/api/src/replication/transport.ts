import * as fs from 'fs';
import * as https from 'https';
import * as http from 'http';
import { DbError, isErrorCode } from '@mmdb/core';
import type { AckChannel, FollowerTransport, FramesLine, FramesQuery, LeaseRecord, SnapshotLine } from '@mmdb/replication';

/**
 * The follower's HTTPS client to the holder (`FollowerTransport`). Nodes authenticate to
 * each other with the operator token. The holder's certificate is trusted through
 * DB_REPLICATION_CA_FILE when set, else pinned: the holder publishes its certificate in the
 * lease (etcd), and only that certificate is accepted for its advertise URL.
 */
export class HttpsTransport implements FollowerTransport {
  private readonly agents = new Map<string, https.Agent>();
  private readonly ca: string | undefined;

  constructor(
    private readonly tenant: string,
    private readonly operatorToken: string,
    caFile: string | undefined,
  ) {
    this.ca = caFile ? fs.readFileSync(caFile, 'utf8') : undefined;
  }

  private agent(holder: LeaseRecord): https.Agent {
    const ca = this.ca ?? holder.cert_pem;
    const key = `${holder.advertise_url}|${ca ?? ''}`;
    let a = this.agents.get(key);
    if (!a) {
      a = new https.Agent({ keepAlive: true, maxSockets: 4, ...(ca ? { ca } : {}), minVersion: 'TLSv1.3' });
      this.agents.set(key, a);
    }
    return a;
  }

  private request(holder: LeaseRecord, method: string, path: string, body?: unknown): Promise<http.IncomingMessage> {
    const url = new URL(path, holder.advertise_url);
    url.searchParams.set('tenant', this.tenant);
    const mod = url.protocol === 'https:' ? https : http;
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = mod.request(
        url,
        {
          method,
          headers: { authorization: `Bearer ${this.operatorToken}`, ...(payload ? { 'content-type': 'application/json' } : {}) },
          ...(url.protocol === 'https:' ? { agent: this.agent(holder) } : {}),
          timeout: 10_000,
        },
        resolve,
      );
      // Acknowledgements and stream requests are small: no Nagle delay on them.
      req.on('socket', (sock) => sock.setNoDelay(true));
      req.on('error', reject);
      req.on('timeout', () => req.destroy(new Error(`no answer from ${holder.holder} within 10 s`)));
      req.end(payload);
    });
  }

  /** A non-2xx answer as the DbError it carries. */
  private async fail(res: http.IncomingMessage, holder: LeaseRecord): Promise<never> {
    let text = '';
    for await (const c of res) text += c;
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    const code = typeof body.error === 'string' && isErrorCode(body.error) ? body.error : 'service_unavailable';
    throw new DbError(code, `${holder.holder} answered ${res.statusCode}: ${String(body.message ?? text.slice(0, 200))}`, body);
  }

  frames(holder: LeaseRecord, q: FramesQuery): AsyncIterable<FramesLine[]> {
    const p = new URLSearchParams({ since_segment: String(q.sinceSegment), follow: String(!!q.follow) });
    if (q.afterLsn !== undefined) p.set('after_lsn', String(q.afterLsn));
    if (q.epoch !== undefined) p.set('epoch', String(q.epoch));
    if (q.follower) p.set('follower', q.follower);
    return this.ndjson<FramesLine>(holder, `/v1/replication/frames?${p}`);
  }

  /** The holder's snapshot stream (bootstrap). */
  snapshot(holder: LeaseRecord): AsyncIterable<SnapshotLine[]> {
    return this.ndjson<SnapshotLine>(holder, '/v1/replication/snapshot');
  }

  private async *ndjson<L>(holder: LeaseRecord, path: string): AsyncIterable<L[]> {
    const res = await this.request(holder, 'GET', path);
    if (res.statusCode !== 200) await this.fail(res, holder);
    let buf = '';
    try {
      for await (const chunk of res) {
        buf += chunk;
        const cut = buf.lastIndexOf('\n');
        if (cut < 0) continue;
        const lines = buf.slice(0, cut).split('\n');
        buf = buf.slice(cut + 1);
        yield lines.filter(Boolean).map((l) => JSON.parse(l) as L);
      }
    } finally {
      res.destroy();
    }
  }

  async ack(holder: LeaseRecord, body: { follower: string; lsn: number; epoch: number }): Promise<void> {
    const res = await this.request(holder, 'POST', '/v1/replication/ack', body);
    if (res.statusCode !== 200) await this.fail(res, holder);
    res.resume();
  }

  /**
   * One `POST /v1/replication/ack` with an `application/x-ndjson` body kept open: each
   * acknowledgement is a line written at once. It ends by itself (→ `onClosed`) when the
   * request fails or the holder answers; `close()` ends the body and lets the holder answer
   * (the socket is dropped if it does not within 5 s: a paused or dead holder).
   */
  ackStream(holder: LeaseRecord, onClosed: () => void): AckChannel {
    const url = new URL('/v1/replication/ack', holder.advertise_url);
    url.searchParams.set('tenant', this.tenant);
    const mod = url.protocol === 'https:' ? https : http;
    let open = true;
    const ended = (): void => {
      if (!open) return;
      open = false;
      onClosed();
    };
    const req = mod.request(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.operatorToken}`, 'content-type': 'application/x-ndjson' },
      ...(url.protocol === 'https:' ? { agent: this.agent(holder) } : {}),
    });
    req.on('socket', (sock) => sock.setNoDelay(true));
    req.on('error', ended);
    req.on('response', (res) => {
      res.resume();
      ended();
    });
    req.flushHeaders();
    return {
      send: (body) => {
        if (!open) return false;
        req.write(JSON.stringify(body) + '\n');
        return true;
      },
      close: () => {
        if (!open) return;
        open = false;
        req.end();
        const timer = setTimeout(() => req.destroy(), 5000).unref();
        req.on('close', () => clearTimeout(timer));
      },
    };
  }

  close(): void {
    for (const a of this.agents.values()) a.destroy();
    this.agents.clear();
  }
}
