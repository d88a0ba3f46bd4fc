/**
 * TLS options for Node's own fetch. Node ships undici but does not export its `Agent`; the
 * global dispatcher Node creates on the first fetch is one, so its constructor is taken from
 * there (no dependency on the `undici` package, which could differ from the one fetch uses).
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

type Dispatcher = { close(): Promise<void>; destroy?(): Promise<void> };
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

/** A dispatcher for `fetch(url, { dispatcher })`, or undefined when no TLS option is set. */
export async function tlsDispatcher(o: TlsOptions): Promise<Dispatcher | undefined> {
  const ca = o.ca ?? (o.caFile ? readFileSync(o.caFile) : undefined);
  if (!ca && !o.insecure) return undefined;
  const Agent = await undiciAgent();
  return new Agent({ connect: { ...(ca ? { ca } : {}), ...(o.insecure ? { rejectUnauthorized: false } : {}) }, keepAliveTimeout: 30_000 });
}
