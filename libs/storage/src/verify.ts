/**
 * `verify`: rebuilds every derived entry from the rows alone, as if each row were
 * inserted into an empty store (after the schema-level entries its manifest derives), and compares the result with what each participant's
 * ranges hold. Any missing, extra or different key is reported.
 */
import type { TableManifest } from '@mmdb/core';
import type { CommitParticipant, StoredRow } from './api';
import { KeyReader, RequestContext, WriteSet } from './context';
import { KEYSPACE, keyOf, decodeTuple, prefixRange } from './keys';
import { decodeRow, keyIdOf } from './records';
import type { Db } from './snapshot';

export interface VerifyDifference {
  readonly schema: string;
  readonly kind: 'missing' | 'extra' | 'different';
  /** The key, hex-encoded. */
  readonly key: string;
}

export interface VerifyReport {
  readonly ok: boolean;
  readonly schemas: number;
  readonly rows: number;
  readonly derivedKeys: number;
  readonly differences: readonly VerifyDifference[];
}

const MAX_REPORTED = 100;

export async function verifyStore(db: Db, manifests: readonly TableManifest[], participants: readonly CommitParticipant[]): Promise<VerifyReport> {
  const snap = db.snapshot();
  const differences: VerifyDifference[] = [];
  let rows = 0;
  let derivedKeys = 0;
  let diffCount = 0;
  try {
    const rowPrefix = Buffer.from(KEYSPACE.row);
    // Row keys come from the snapshot; every derived key from the rebuild alone.
    const base: KeyReader = {
      get: async (key) => (key[0] === rowPrefix[0] ? db.get(key, { snapshot: snap }) : undefined),
      range: async (o) => (o.gte[0] === rowPrefix[0] ? ((await db.iterator({ ...o, snapshot: snap }).all()) as Array<[Buffer, Buffer]>) : []),
    };
    const byId = new Map(manifests.map((m) => [m.id, m]));
    for (const m of manifests) {
      const expected = new WriteSet();
      const ctx = new RequestContext(0, base, [expected], (id) => byId.get(id));
      // What the schema itself stands for (e.g. a vector table's spec): its derivation as a
      // re-registration of the same manifest, which derives no row entries.
      for (const p of participants) {
        if (!p.deriveSchema) continue;
        for (const w of await p.deriveSchema(m, m, ctx)) ctx.put(w.key, w.value);
      }
      ctx.own.mergeInto(expected);
      ctx.own.clear();
      const head = keyOf(KEYSPACE.row, [keyIdOf(m)]).length;
      for (const [k, v] of (await db.iterator({ ...prefixRange(KEYSPACE.row, [keyIdOf(m)]), snapshot: snap }).all()) as Array<[Buffer, Buffer]>) {
        const row: StoredRow = decodeRow(m.id, decodeTuple(k, head), v);
        rows++;
        for (const p of participants) {
          if (!p.deriveRow) continue;
          for (const w of await p.deriveRow({ schema: m.id, manifest: m, pk: row.pk, before: null, after: row }, ctx)) ctx.put(w.key, w.value);
        }
        ctx.own.mergeInto(expected);
        ctx.own.clear();
      }
      for (const p of participants) {
        for (const [gte, lt] of p.verifyRanges?.(m) ?? p.dropRanges?.(m) ?? []) {
          const want = new Map(expected.inRange(gte, lt).filter(([, v]) => v !== null).map(([k, v]) => [k.toString('hex'), v as Buffer]));
          const have = (await db.iterator({ gte, lt, snapshot: snap }).all()) as Array<[Buffer, Buffer]>;
          derivedKeys += have.length;
          const report = (kind: VerifyDifference['kind'], key: string) => {
            diffCount++;
            if (differences.length < MAX_REPORTED) differences.push({ schema: m.id, kind, key });
          };
          for (const [k, v] of have) {
            const hex = k.toString('hex');
            const w = want.get(hex);
            if (w === undefined) report('extra', hex);
            else if (!w.equals(v)) report('different', hex);
            want.delete(hex);
          }
          for (const hex of want.keys()) report('missing', hex);
        }
      }
    }
  } finally {
    await snap.close();
  }
  return { ok: diffCount === 0, schemas: manifests.length, rows, derivedKeys, differences };
}
