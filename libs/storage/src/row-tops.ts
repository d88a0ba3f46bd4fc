/**
 * An upper bound of the row keys of each key id (DESIGN.md "Appends read nothing"): the
 * greatest row key the database held when it was read, raised by every row key a prepared
 * put writes from then on. A put whose key sorts above it names a row that cannot exist, so
 * the writer reads nothing for it (no read-cache probe, no key in the group's getMany):
 * inserts in ascending key order (sequence numbers, ULIDs, timestamps) are the usual load.
 *
 * It stays an upper bound because every row key written to the database is written either by
 * a put of this writer (noted by `wrote` when it is prepared, before its batch is issued,
 * whether or not the bound is known yet) or by frames joined from elsewhere (`forget`: the
 * database's tops are read again). Deletes and failed groups leave it too high, never too low.
 * Latin1 strings of keys compare like the bytes.
 */
export class RowTops {
  /** Per key id: the database's greatest row key when read (undefined: not read; null: none), and the greatest noted since. */
  private readonly tops = new Map<string, { db: string | null | undefined; written: string | null }>();

  constructor(private readonly readTop: (keyId: string) => Promise<string | null>) {}

  /** A put of `keyId` writes the row key `bin` (its latin1 string). */
  wrote(keyId: string, bin: string): void {
    const t = this.tops.get(keyId);
    if (!t) this.tops.set(keyId, { db: undefined, written: bin });
    else if (t.written === null || bin > t.written) t.written = bin;
  }

  /** True when `bin` sorts above every row key `keyId` may hold (false while its bound is not read). */
  above(keyId: string, bin: string): boolean {
    const t = this.tops.get(keyId);
    if (!t || t.db === undefined) return false;
    return (t.db === null || bin > t.db) && (t.written === null || bin > t.written);
  }

  /** Whether the bound of `keyId` is known (else `load` it). */
  known(keyId: string): boolean {
    return this.tops.get(keyId)?.db !== undefined;
  }

  /** Reads the database's greatest row key of each key id not known yet. */
  async load(keyIds: Iterable<string>): Promise<void> {
    await Promise.all(
      [...new Set(keyIds)].map(async (id) => {
        if (this.known(id)) return;
        const top = await this.readTop(id);
        const t = this.tops.get(id);
        if (t) t.db = top;
        else this.tops.set(id, { db: top, written: null });
      }),
    );
  }

  /** Rows were written by frames from elsewhere: every database top is read again when next needed. */
  forget(): void {
    for (const t of this.tops.values()) t.db = undefined;
  }
}
