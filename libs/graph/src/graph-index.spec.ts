import type { TableManifest } from '@mmdb/core';
import type { CommittedFrame, KeyWrite, Snapshot, StoreReader } from '@mmdb/storage';
import { forwardKey, reverseKey } from './edges';
import { GraphIndex } from './graph-index';

const manifest = {
  namespace: 't',
  table: 'e',
  id: 't.e',
  primary_key: ['src', 'dst'],
  columns: [],
  indexes: [],
  foreign_keys: [],
  checks: [],
  fulltext: [],
  relations: [{ name: 'r', source: 't.n', source_columns: ['src'], target: 't.n', columns: ['dst'] }],
} as unknown as TableManifest;

const put = (src: string, dst: string): KeyWrite[] => [
  { key: forwardKey('t.e', 'r', { src, dst, owner: null }), value: Buffer.alloc(0) },
  { key: reverseKey('t.e', 'r', { src, dst, owner: null }), value: Buffer.alloc(0) },
];
const del = (src: string, dst: string): KeyWrite[] => put(src, dst).map((w) => ({ key: w.key, value: null }));
const frame = (lsn: number, writes: KeyWrite[]): CommittedFrame => ({ version: 1, epoch: 0, lsn, time: 0, changes: [], writes });

describe('GraphIndex lazy build', () => {
  it('frames applied while the first scan runs are replayed on top of it (idempotently)', async () => {
    // The snapshot holds a→b, a→c; while its scan is paused, frames add a→d,
    // delete a→b, and re-apply a→c (already in the snapshot).
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const stored = [...put('a', 'b'), ...put('a', 'c')].filter((w) => w.key.includes(Buffer.from('f')));
    const snap: Partial<Snapshot> = {
      rawGet: async () => undefined, // no checkpoint image
      async *rawRange() {
        await gate;
        yield stored.map((w) => [w.key, w.value as Buffer] as [Buffer, Buffer]);
      },
      release: async () => undefined,
    };
    const reader: StoreReader = {
      snapshot: () => snap as Snapshot,
      manifests: () => [manifest],
      writeCheckpoint: async () => undefined,
      lastLsn: 0,
    };
    const g = new GraphIndex();
    await g.open(reader);
    const pending = g.neighbors('t.e', 'r', 'a');
    await Promise.resolve();
    g.apply(frame(1, put('a', 'd')));
    g.apply(frame(2, del('a', 'b')));
    g.apply(frame(3, put('a', 'c')));
    release();
    expect((await pending).sort()).toEqual(['c', 'd']);
    g.apply(frame(4, put('a', 'e')));
    expect((await g.neighbors('t.e', 'r', 'a')).sort()).toEqual(['c', 'd', 'e']);
  });
});
