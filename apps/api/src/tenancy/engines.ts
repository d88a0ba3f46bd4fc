import type { TenantStore } from './store-port';

/** What a feature's engine factory is given, once per tenant store, before the store opens. */
export interface EngineContext {
  readonly tenant: string;
  /** The tenant's data directory (the store lives in it; an engine may keep side files in `<dir>/<name>`). */
  readonly dir: string;
}

/**
 * Optional hooks an engine object may implement. The object a factory returns is the
 * engine; its participants are `engine.participants` if present, else the engine itself
 * when it looks like a CommitParticipant (has `name` and one of derive* / apply / open).
 */
export interface EngineHooks {
  /** Participants to pass to `TenantStore.open` (in this order, after earlier engines'). */
  readonly participants?: readonly unknown[];
  /**
   * Called once the store is open (e.g. to keep a reader, or register a CHECK evaluator), with the
   * tenant's other engines (the SQL engine fills its executor's Sources port from them).
   */
  attach?(store: TenantStore, peers: EnginePeers): void | Promise<void>;
  /** Called before the store closes. */
  close?(): void | Promise<void>;
}

/** The engines of the same tenant, by registered name. */
export interface EnginePeers {
  engine<T>(name: string): T | undefined;
}

export type EngineFactory<T = unknown> = (ctx: EngineContext) => T | Promise<T>;

export function participantsOf(engine: unknown): unknown[] {
  if (!engine || typeof engine !== 'object') return [];
  const e = engine as EngineHooks & Record<string, unknown>;
  if (Array.isArray(e.participants)) return [...e.participants];
  const looksLikeParticipant =
    typeof e.name === 'string' &&
    ['deriveRow', 'deriveCustom', 'deriveSchema', 'apply', 'open', 'checkpoint'].some((m) => typeof e[m] === 'function');
  return looksLikeParticipant ? [engine] : [];
}
