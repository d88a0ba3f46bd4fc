/**
 * Natural language → plan, for one store. Lexes the question against the lexicon, looks its shape up in
 * the intent cache, and on a miss parses it with the grammar (then, optionally, asks a model)
 * and caches the template. Answers a plan template with its parameters.
 */
import { createHash } from 'crypto';
import { DbError, type JsonValue, type TableManifest } from '@mmdb/core';
import { validatePlan, type PlanNode } from '@mmdb/plan';
import { PlanBuilder } from './build';
import type { IntentCache, IntentEntry } from './cache';
import { Grammar } from './grammar';
import { interpret, readings } from './interpret';
import { lex, type Lexed } from './lex';
import { Lexicon, type ValueSource } from './lexicon';
import { SchemaModel } from './schema';
import { suggest } from './suggest';
import type { ModelAdapter } from './model';
import type { Query } from './ir';

export interface AskOptions {
  readonly schemas?: readonly string[];
  readonly direction?: 'forward' | 'reverse';
}

export interface Compiled {
  readonly plan: PlanNode;
  readonly params: JsonValue[];
  readonly cache: 'hit' | 'miss';
  readonly interpretation?: string;
}

/** Bumped when the grammar changes what it compiles: older cached templates are not reused. */
export const COMPILER_VERSION = 2;

const fingerprints = new WeakMap<TableManifest, string>();

/** A short hash of a manifest (memoized per manifest object: the store hands out the same ones until a change). */
export function manifestFingerprint(m: TableManifest): string {
  let f = fingerprints.get(m);
  if (f === undefined) {
    f = createHash('sha1').update(JSON.stringify(m)).digest('hex').slice(0, 16);
    fingerprints.set(m, f);
  }
  return f;
}

/** Schema ids a plan reads (its scans and multi-model leaves, including those inside subqueries). */
const READS = new Set(['scan', 'get', 'index_scan', 'graph_expand', 'fts_search']);

export function planReads(plan: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(plan)) plan.forEach((x) => planReads(x, out));
  else if (plan && typeof plan === 'object') {
    const o = plan as Record<string, unknown>;
    if (typeof o.op === 'string' && READS.has(o.op) && typeof o.schema === 'string') out.add(o.schema);
    for (const v of Object.values(o)) if (v && typeof v === 'object') planReads(v, out);
  }
  return out;
}

/** The plan with its parameters written in as literals: what `show_plan` returns, runnable as is on POST /query. */
export function bindParams<T>(plan: T, params: readonly JsonValue[]): T {
  const walk = (x: unknown): unknown => {
    if (Array.isArray(x)) return x.map(walk);
    if (!x || typeof x !== 'object') return x;
    const o = x as Record<string, unknown>;
    if (o.kind === 'param' && typeof o.index === 'number') return { kind: 'lit', value: params[o.index - 1] ?? null };
    return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, walk(v)]));
  };
  return walk(plan) as T;
}

export class NlCompiler {
  private lexicons = new Map<string, { lx: Lexicon; stale: boolean; building?: Promise<void> }>();
  /** Called when the durable write of a cache entry fails (the entry stays in memory). */
  onStoreError?: (e: Error) => void;

  constructor(
    private readonly manifests: () => readonly TableManifest[],
    private readonly values: ValueSource,
    readonly cache: IntentCache,
    private readonly model?: ModelAdapter,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * Rows changed. `background`: the next ask still uses the lexicon it has while a new one is
   * built beside it (writes never put a rebuild in an answer's path); otherwise the next ask
   * waits for a fresh one.
   */
  invalidate(background = false): void {
    if (!background) this.lexicons.clear();
    else for (const e of this.lexicons.values()) e.stale = true;
  }

  private visible(schemas?: readonly string[]): TableManifest[] {
    const all = this.manifests();
    if (!schemas) return [...all];
    const out: TableManifest[] = [];
    for (const s of schemas) {
      const ms = all.filter((m) => m.id === s || m.namespace === s);
      if (!ms.length) throw new DbError('schema_not_found', `no schema is registered under "${s}"`, { schema: s });
      out.push(...ms.filter((m) => !out.includes(m)));
    }
    return out;
  }

  private async lexicon(ms: readonly TableManifest[]): Promise<Lexicon> {
    const key = ms.map((m) => `${m.id}:${manifestFingerprint(m)}`).sort().join(',');
    const e = this.lexicons.get(key);
    if (e) {
      if (e.stale && !e.building) {
        e.stale = false;
        e.building = Lexicon.build(new SchemaModel(ms), this.values)
          .then((lx) => void this.lexicons.set(key, { lx, stale: e.stale }))
          .catch(() => void (e.stale = true))
          .finally(() => (e.building = undefined));
      }
      return e.lx;
    }
    const lx = await Lexicon.build(new SchemaModel(ms), this.values);
    if (this.lexicons.size > 16) this.lexicons.clear();
    this.lexicons.set(key, { lx, stale: false });
    return lx;
  }

  async ask(nl: string, opts: AskOptions = {}): Promise<Compiled> {
    if (typeof nl !== 'string' || !nl.trim()) throw new DbError('validation_failed', 'nl must be a non-empty string', { field: 'nl' });
    const ms = this.visible(opts.schemas);
    const lx = await this.lexicon(ms);
    const lexed = lx.lexed(nl, this.now().toISOString().slice(0, 10), () => lex(nl, lx, this.now()));
    const scope = opts.schemas ? `[${[...opts.schemas].sort().join(',')}]` : '';
    const key = `v${COMPILER_VERSION}:${scope}${lexed.shape}${opts.direction ? `|${opts.direction}` : ''}`;
    const byId = new Map(ms.map((m) => [m.id, m]));
    const fp = (s: string) => (byId.has(s) ? manifestFingerprint(byId.get(s)!) : undefined);
    const params = lexed.slots.flat();
    let entry = this.cache.get(key, fp);
    const hit = !!entry;
    if (!entry) {
      entry = await this.compile(nl, lexed, lx, key, opts, ms);
      // in memory at once; the durable write is not in the answer's path (a lost entry only costs a later miss)
      this.cache.put(entry).catch((e: Error) => this.onStoreError?.(e));
    }
    if (entry.ambiguous) {
      throw new DbError('ambiguous_graph_direction', `the question does not say which way to traverse "${entry.ambiguous.relation}"; resend with direction "forward" or "reverse"`, {
        relation: entry.ambiguous.relation,
        direction: { forward: entry.ambiguous.forward, reverse: entry.ambiguous.reverse },
      });
    }
    const interpretation = entry.interpretation?.replace(/\{\{(\d+)\.(\d+)\}\}/g, (_, s, p) => String(lexed.slots[Number(s)]?.[Number(p)] ?? '?').replace(/^%(.*)%$/, '"$1"'));
    return { plan: entry.plan!, params, cache: hit ? 'hit' : 'miss', ...(interpretation ? { interpretation } : {}) };
  }

  private async compile(nl: string, lexed: Lexed, lx: Lexicon, key: string, opts: AskOptions, ms: readonly TableManifest[]): Promise<IntentEntry> {
    const offsets: number[] = [];
    lexed.slots.reduce((acc, s, i) => ((offsets[i] = acc), acc + s.length), 0);
    let q: Query;
    try {
      q = new Grammar(lx, { direction: opts.direction, clock: lexed.clock }).parse(lexed.items);
    } catch (err) {
      const e = err as DbError;
      if (!(e instanceof DbError) || e.code !== 'validation_failed') throw e;
      const fromModel = this.model ? await this.model.compile(nl, ms, lexed).catch(() => undefined) : undefined;
      if (fromModel) return this.entry(key, fromModel, ms, undefined, 'model');
      const words = (e.details.not_understood as string[] | undefined) ?? [];
      const hidden = opts.schemas ? await this.hiddenWords(nl, ms) : [];
      const sugg = suggest([...words, ...nl.toLowerCase().split(/[^a-z']+/)], lx);
      throw new DbError('validation_failed', `${e.message}${hidden.length ? `; ${hidden.join(', ')} name schemas outside "schemas"` : ''}${sugg.length ? `; did you mean ${sugg.map((s) => `"${s}"`).join(', ')}?` : ''}`, {
        not_understood: [...words, ...hidden], suggestions: sugg,
      });
    }
    const amb = q.links.find((l) => l.hop?.ambiguous)?.hop;
    if (amb) {
      const r = readings(amb.rel);
      return { key, reads: {}, ambiguous: { relation: amb.rel.name, forward: r.forward, reverse: r.reverse }, source: 'grammar', at: Date.now() };
    }
    const plan = new PlanBuilder(lx.schema, offsets).build(q);
    return this.entry(key, plan, ms, interpret(q, lx.schema), 'grammar');
  }

  private entry(key: string, plan: PlanNode, ms: readonly TableManifest[], interpretation: string | undefined, source: 'grammar' | 'model'): IntentEntry {
    const checked = validatePlan(plan);
    const reads: Record<string, string> = {};
    for (const s of planReads(checked)) {
      const m = ms.find((x) => x.id === s);
      if (!m) throw new DbError('validation_failed', `the plan reads ${s}, which is not visible to this question`);
      reads[s] = manifestFingerprint(m);
    }
    return { key, plan: checked, reads, ...(interpretation ? { interpretation } : {}), source, at: Date.now() };
  }

  /** Words of the question that name tables, columns or values outside the visible schemas. */
  private async hiddenWords(nl: string, visible: readonly TableManifest[]): Promise<string[]> {
    const full = await this.lexicon(this.manifests());
    const seen = new Set(visible.map((m) => m.id));
    const out: string[] = [];
    for (const it of lex(nl, full, this.now()).items) {
      if (it.k === 'table' && !seen.has(it.t)) out.push(`"${it.w}" (${it.t})`);
      if (it.k === 'value' && !it.hits.some((h) => seen.has(h.table))) out.push(`"${it.w}" (${it.hits[0].table}.${it.hits[0].column})`);
      if (it.k === 'col' && !it.cols.some((c) => seen.has(c.table))) out.push(`"${it.w}" (${it.cols[0].table})`);
    }
    return out;
  }
}
