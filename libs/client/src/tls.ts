/**
 * The HTTP agent: Node's own undici (the engine of its `fetch`). Node ships undici but does not
 * export its `Agent`; the global dispatcher Node creates on the first fetch is one, so its
 * constructor is taken from there (no dependency on the `undici` package, which could differ
 * from Node's). Calls go through the agent's `request()` rather than `fetch()`: the same
 * connection pool and TLS, without the WHATWG streams layer (a third of fetch's client CPU
 * per small request: tools/bench/client).
 */
import { readFileSync } from 'fs';

export interface TlsOptions {
  /** PEM text of the CA (or self-signed certificate) to trust. */
  readonly ca?: string | Buffer;
  /** A file holding that PEM. */
  readonly caFile?: string;
  /** Accept any certificate: only for a local self-signed server. */
  readonly insecure?: boolean;
}

/** The part of undici's Agent the client uses. */
export interface Dispatcher {
  request(opts: {
    origin: string;
    path: string;
    method: string;
    headers: Record<string, string>;
    body?: string | AsyncIterable<Uint8Array | string>;
    signal?: AbortSignal;
  }): Promise<{ statusCode: number; headers: Record<string, string | string[] | undefined>; body: AsyncIterable<Buffer> & { text(): Promise<string>; destroy(e?: Error): void } }>;
  close(): Promise<void>;
}
let agentClass: (new (opts: object) => Dispatcher) | undefined;

async function undiciAgent(): Promise<new (opts: object) => Dispatcher> {
  if (!agentClass) {
    await (await fetch('data:,')).arrayBuffer(); // makes Node create its global dispatcher
    // The realm fetch was made in (not always ours: a test runner may run us in a vm context).
    const realm = (fetch as unknown as { constructor: FunctionConstructor }).constructor('return globalThis')() as Record<symbol, unknown>;
    const d = realm[Symbol.for('undici.globalDispatcher.1')] as { constructor: new (o: object) => Dispatcher } | undefined;
    if (!d || typeof d.constructor !== 'function') throw new Error('this Node has no undici dispatcher to configure TLS on; use NODE_EXTRA_CA_CERTS instead');
    agentClass = d.constructor;
  }
  return agentClass;
}

/** An agent with the TLS options (a CA, or none checked) applied to its connections. */
export async function makeAgent(o: TlsOptions): Promise<Dispatcher> {
  const ca = o.ca ?? (o.caFile ? readFileSync(o.caFile) : undefined);
  const Agent = await undiciAgent();
  return new Agent({ connect: { ...(ca ? { ca } : {}), ...(o.insecure ? { rejectUnauthorized: false } : {}) }, keepAliveTimeout: 30_000 });
}
