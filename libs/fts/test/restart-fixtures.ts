import type { TenantStore } from '@mmdb/storage';

/** lib.papers: an integer id and a body declared for full-text search (english analyzer). */
export const PAPERS = `
namespace = "lib"
table = "papers"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "body"
ty = "str"
[[fulltext]]
field = "body"
`;

/** Stops a store as a crash would: its database closed under it, no final checkpoint. */
export async function crash(store: TenantStore): Promise<void> {
  await (store as unknown as { db: { close(): Promise<void> } }).db.close();
  (store as unknown as { closed: boolean }).closed = true;
}

const WORDS = ['shock', 'wave', 'flow', 'heat', 'transfer', 'boundary', 'layer', 'supersonic', 'laminar', 'plate', 'nozzle', 'jet'];
/** A doc's text: 3–9 words of a small vocabulary, plus one rare word (r<i mod 997>). */
export const text = (i: number): string =>
  `${Array.from({ length: 3 + (i % 7) }, (_, j) => WORDS[(i * 7 + j * j * 3 + (i >> 3)) % WORDS.length]).join(' ')} r${i % 997}`;
