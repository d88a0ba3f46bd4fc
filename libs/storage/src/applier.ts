/**
 * The frame applier: the only code that turns a frame into state. The commit path, recovery
 * and followers all go through it:
 *
 * - `keyWrites(frame)` is every key a frame stands for (its rows, its derived writes). The
 *   commit path writes the same keys from the group's write set it built them in; a follower
 *   writes these (FrameApplier.followerBatch).
 * - `apply(frame, from)` applies a durable frame to in-memory state: the catalog, the
 *   per-schema LSNs, and every participant whose checkpoint it is past (recovery passes each
 *   participant's checkpoint LSN; the commit path and followers pass none: all of them).
 * - `finish(dropped)` clears the keys of schemas the frames dropped (after the frames are
 *   durable, before anything later is prepared or applied).
 */
import type { TableManifest } from '@mmdb/core';
import type { CommitParticipant, CommittedFrame, KeyWrite } from './api';
import type { SchemaEntry } from './coordinator';
import { parseManifest } from './manifest';
import { frameKeyWrites, keyIdOf, logKey, metaKey, parseJson } from './records';

export interface ApplierHost {
  readonly catalog: Map<string, SchemaEntry>;
  readonly tableLsns: Map<string, number>;
  participants(): readonly CommitParticipant[];
  /** Removes every key of a dropped schema (rows and each participant's ranges). */
  clearSchema(m: TableManifest): Promise<void>;
  /** Deletes a key outside the log (the drop marker once the drop is finished). */
  del(key: Buffer): Promise<void>;
  /** Clears, in the background, the row and index keys a table left behind when a frame moved it to other keys. */
  retire(keyId: string): void;
}

export class FrameApplier {
  constructor(private readonly host: ApplierHost) {}

  /** Every key write a frame stands for: its row keys, its derived writes, and its own log entry. */
  static keyWrites(frame: CommittedFrame, bytes: Buffer, keyId?: (schema: string) => string): KeyWrite[] {
    const out = frameKeyWrites(frame, keyId);
    out.push({ key: logKey(frame.lsn), value: bytes });
    return out;
  }

  /** The manifests a frame drops, read from the drop markers it writes (what `finish` clears). */
  static dropped(frame: CommittedFrame): TableManifest[] {
    const out: TableManifest[] = [];
    for (const c of frame.changes) {
      if (c.op !== 'schema_drop') continue;
      const marker = metaKey('dropping', c.schema);
      const w = frame.writes.find((x) => x.value !== null && x.key.equals(marker));
      if (w?.value) out.push(parseJson<TableManifest>(w.value));
    }
    return out;
  }

  /**
   * Applies one durable frame to in-memory state, in LSN order. `from`, when given, is the
   * LSN each participant already covers (recovery): a participant gets only frames past it,
   * and the catalog (loaded from its keys at open) is left alone. Returns whether the frame
   * dropped a schema.
   */
  apply(f: CommittedFrame, from?: ReadonlyMap<CommitParticipant, number>): boolean {
    let dropped = false;
    if (!from) {
      let last: string | undefined;
      for (const c of f.changes) {
        // (once per run of changes to one table: a batch's thousand puts set it once)
        if ('schema' in c && c.schema !== last) this.host.tableLsns.set((last = c.schema), f.lsn);
        if (c.op === 'schema_put') {
          const before = this.host.catalog.get(c.schema)?.manifest;
          const physical = c.physical ?? before?.physical;
          const manifest = physical !== undefined && physical !== c.schema ? { ...parseManifest(c.toml), physical } : parseManifest(c.toml);
          this.host.catalog.set(c.schema, { manifest, toml: c.toml });
          // A cutover moved the table to other keys: the old ones go in the background.
          if (before && keyIdOf(before) !== keyIdOf(manifest)) this.host.retire(keyIdOf(before));
        }
        else if (c.op === 'schema_drop') {
          const gone = this.host.catalog.get(c.schema)?.manifest;
          // Its rows and index entries are cleared in the background (finish leaves them alone).
          this.host.catalog.delete(c.schema);
          const shared = gone && [...this.host.catalog.values()].some((e) => keyIdOf(e.manifest) === keyIdOf(gone));
          if (gone && c.background === true && !shared) this.host.retire(keyIdOf(gone));
          dropped = true;
        }
      }
    }
    for (const p of this.host.participants()) {
      if (!p.apply) continue;
      if (from) {
        const at = from.get(p);
        if (at === undefined || f.lsn <= at) continue;
      }
      p.apply(f);
    }
    return dropped;
  }

  /** Clears the keys of the schemas dropped by frames just applied, and their drop markers. */
  async finish(dropped: readonly TableManifest[]): Promise<void> {
    for (const m of dropped) {
      await this.host.clearSchema(m);
      await this.host.del(metaKey('dropping', m.id));
    }
  }
}
