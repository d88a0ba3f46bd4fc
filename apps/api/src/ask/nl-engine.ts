/**
 * The English surface of one tenant store: the compiler, its intent cache kept in the store
 * (meta keys `nlq_intent/<shape>` written by custom changes, so they survive restarts and
 * reach followers), and the store participant that notices row and manifest changes.
 */
import { Logger } from '@nestjs/common';
import type { JsonValue, TableManifest } from '@mmdb/core';
import { IntentCache, NlCompiler, type IntentBacking, type IntentEntry, type ModelAdapter, type ValueSource } from '@mmdb/nlq';
import { KEYSPACE, keyOf, prefixRange, type CommittedFrame, type CustomChange, type KeyWrite, type TenantStore } from '@mmdb/storage';

const PREFIX = 'nlq_intent';
/** Rows read per table when building the value lexicon (its first rows in key order). */
const SCAN_LIMIT = 500_000;

export interface NlSettings {
  readonly cacheSize: number;
  readonly lexiconRefreshMs: number;
  readonly model?: ModelAdapter;
}

export class NlEngine implements IntentBacking {
  readonly name = 'nlq';
  private readonly log = new Logger('nlq');
  private store: TenantStore | null = null;
  compiler: NlCompiler | null = null;
  readonly cache: IntentCache;
  private version = 0;
  private builtVersion = -1;
  private builtAt = 0;
  /** Restricted users' compilers (security/ask-lexicon.ts): by user and catalogue version, the latest few. */
  private readonly userCompilers = new Map<string, NlCompiler>();

  constructor(private readonly settings: NlSettings) {
    this.cache = new IntentCache(settings.cacheSize, this);
  }

  async attach(store: TenantStore): Promise<void> {
    this.store = store;
    this.compiler = new NlCompiler(() => store.tables(), (t, c, n) => this.distinct(t, c, n), this.cache, this.settings.model);
    this.compiler.onStoreError = (e) => this.log.warn(`intent cache entry not stored: ${e.message}`);
    await this.cache.load();
  }

  /**
   * After writes, lexicons are rebuilt at most once per refresh interval, in the background (the
   * ask uses the one it has meanwhile); with an interval of 0 the next ask waits for a fresh one.
   */
  freshen(): void {
    if (this.version !== this.builtVersion && Date.now() - this.builtAt >= this.settings.lexiconRefreshMs) {
      this.compiler?.invalidate(this.settings.lexiconRefreshMs > 0);
      for (const c of this.userCompilers.values()) c.invalidate(this.settings.lexiconRefreshMs > 0);
      this.builtVersion = this.version;
      this.builtAt = Date.now();
    }
  }

  /**
   * A restricted user's compiler: a lexicon of what `manifests` and `values` give (the schemas it
   * may read, the values its policy shows), and an intent cache of its own, in memory only.
   */
  compilerFor(key: string, manifests: () => readonly TableManifest[], values: ValueSource): NlCompiler {
    let c = this.userCompilers.get(key);
    if (c) {
      this.userCompilers.delete(key);
      this.userCompilers.set(key, c);
      return c;
    }
    c = new NlCompiler(manifests, values, new IntentCache(Math.min(this.settings.cacheSize, 256)), this.settings.model);
    if (this.userCompilers.size >= 16) this.userCompilers.delete(this.userCompilers.keys().next().value as string);
    this.userCompilers.set(key, c);
    return c;
  }

  /** One pass over a table (at most SCAN_LIMIT rows): the distinct values of each text column, null past `limit`. */
  private async distinct(table: string, columns: readonly string[], limit: number): Promise<Map<string, string[] | null>> {
    const snap = this.store!.snapshot();
    const seen = new Map(columns.map((c) => [c, new Set<string>()] as const));
    let rows = 0;
    try {
      for await (const batch of snap.scanRows(table, { batchSize: 1024 })) {
        for (const r of batch) {
          for (const [c, set] of seen) {
            const v = r.values[c];
            if (set.size <= limit && typeof v === 'string') set.add(v);
          }
        }
        rows += batch.length;
        if (rows >= SCAN_LIMIT) break;
      }
    } finally {
      await snap.release();
    }
    return new Map([...seen].map(([c, set]) => [c, set.size > limit ? null : [...set]]));
  }

  // ---- commit participant ----
  deriveCustom(change: CustomChange): { writes: KeyWrite[]; result: JsonValue } {
    const p = change.payload as { put: IntentEntry | null; drop: string[] };
    const writes: KeyWrite[] = p.drop.map((k) => ({ key: keyOf(KEYSPACE.meta, [PREFIX, k]), value: null }));
    if (p.put) writes.push({ key: keyOf(KEYSPACE.meta, [PREFIX, p.put.key]), value: Buffer.from(JSON.stringify(p.put)) });
    return { writes, result: null };
  }

  deriveSchema(_m: TableManifest): KeyWrite[] {
    return [];
  }

  apply(frame: CommittedFrame): void {
    for (const c of frame.changes) {
      if (c.op === 'custom' || c.op === 'catalog') continue; // catalogue entries (tokens, users, usage) change no row
      this.version++;
      if (c.op === 'schema_put' || c.op === 'schema_drop') {
        void this.cache.dropSchema(c.schema).catch(() => undefined);
        this.userCompilers.clear();
      }
    }
  }

  // ---- IntentBacking ----
  async load(): Promise<IntentEntry[]> {
    const snap = this.store!.snapshot();
    const out: IntentEntry[] = [];
    try {
      for await (const batch of snap.rawRange(prefixRange(KEYSPACE.meta, [PREFIX]))) for (const [, v] of batch) out.push(JSON.parse(v.toString()) as IntentEntry);
    } finally {
      await snap.release();
    }
    return out;
  }

  async save(put: IntentEntry | null, drop: readonly string[]): Promise<void> {
    if (!this.store) return;
    await this.store.commit({ changes: [{ op: 'custom', participant: this.name, type: 'intent', payload: { put, drop: [...drop] } as unknown as JsonValue }] });
  }
}
