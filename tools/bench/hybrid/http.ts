/** HTTPS helpers shared by the hybrid bench's scripts: a keep-alive JSON client of the bench tenant and the server's /metrics text. */
import * as https from 'node:https';

export const TENANT = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
export const TOKEN = 'hybrid-bench-token-0123456789';

/** `(method, path under the tenant, body?, content type?)` → the parsed JSON answer; a non-200 rejects. */
export type Call = (method: string, p: string, body?: unknown, type?: string) => Promise<any>;

export function tenantClient(url: string, ca: string): Call {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 8, ca });
  return (method, p, body, type = 'application/json') => new Promise<any>((resolve, reject) => {
    const data = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const r = https.request(`${url}/v1/tenants/${TENANT}${p}`, { method, agent, headers: { authorization: `Bearer ${TOKEN}`, ...(data ? { 'content-type': type, 'content-length': Buffer.byteLength(data) } : {}) } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c) => parts.push(c));
      res.on('end', () => {
        const t = Buffer.concat(parts).toString('utf8');
        if (res.statusCode !== 200) reject(new Error(`${p}: ${res.statusCode} ${t.slice(0, 300)}`));
        else resolve(t ? JSON.parse(t) : null);
      });
    });
    r.on('error', reject);
    r.end(data);
  });
}

/** The server's public /metrics (Prometheus text). */
export function metricsText(url: string, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    https.get(`${url}/metrics`, { ca }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve(text));
    }).on('error', reject);
  });
}

/** `db_query_latency_ms{surface}` bucket counts so far, by `le` (cumulative; `+Inf` is every observation). */
export async function latencyBuckets(url: string, ca: string, surface: string): Promise<Map<string, number>> {
  const text = await metricsText(url, ca);
  const out = new Map<string, number>();
  const re = new RegExp(`^db_query_latency_ms_bucket\\{le="([^"]+)",surface="${surface}"\\} (\\d+)$`, 'gm');
  for (const m of text.matchAll(re)) out.set(m[1], Number(m[2]));
  return out;
}

/** Loads the corpus's lines in `_batch` commits of 2,000 rows, reads the table once (the table cache) and waits `settleMs` for the load's background work. */
export async function loadRows(c: Call, lines: Iterable<string>, rows: number, settleMs: number): Promise<void> {
  let buf = '';
  let k = 0;
  for (const l of lines) {
    buf += `${l}\n`;
    if (++k % 2000 === 0 || k === rows) {
      await c('POST', '/rows/bench.items/_batch', buf, 'application/x-ndjson');
      buf = '';
    }
  }
  await c('POST', '/sql', { sql: 'SELECT count(*) AS n FROM bench.items' });
  await new Promise((r) => setTimeout(r, settleMs));
}

