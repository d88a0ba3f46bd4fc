/** Targets: the engine in-process over a real store in a temp dir, or the HTTP /sql route. */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { TenantStore } from '@mmdb/storage';
import { SqlEngine } from '@mmdb/sql';
import type { SltTarget } from './runner';
import type { SltValue } from './format';

export async function inProcessTarget(): Promise<SltTarget & { engine: SqlEngine }> {
  const dir = mkdtempSync(join(tmpdir(), 'slt-'));
  const store = await TenantStore.open({ dir, sync: false });
  const engine = new SqlEngine(store);
  store.setCheckEvaluator(engine.checkEvaluator);
  return {
    engine,
    async statement(sql) {
      await engine.run(sql, { deleteMode: 'execute' });
    },
    async query(sql) {
      const res = await engine.run(sql, { deleteMode: 'execute' });
      const last = res[res.length - 1];
      if (!last || last.kind !== 'select') throw new Error('not a query');
      return last.rows as SltValue[][];
    },
    async close() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs statements through `POST /v1/tenants/{tenant}/sql` (rows as arrays). Over HTTP DELETE only
 * translates (spec §4.5), so scripts that DELETE and then read differ; JSON also loses 1.0 vs 1.
 */
export function httpTarget(base: string, tenant: string, token: string, fetchImpl: typeof fetch = fetch): SltTarget {
  const call = async (sql: string) => {
    const res = await fetchImpl(`${base}/v1/tenants/${tenant}/sql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ sql, format: 'arrays' }),
    });
    const body = (await res.json()) as { kind?: string; rows?: unknown[][]; message?: string };
    if (!res.ok) throw new Error(body.message ?? `HTTP ${res.status}`);
    return body;
  };
  return {
    async statement(sql) { await call(sql); },
    async query(sql) {
      const body = await call(sql);
      if (body.kind !== 'select') throw new Error('not a query');
      return (body.rows ?? []).map((r) => r.map((v) => (typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : (v as SltValue))));
    },
  };
}
