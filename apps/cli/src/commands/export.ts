/** `mmdb export <schema>`: every row, in primary-key order, page by page, as NDJSON, CSV or JSON. */
import * as fs from 'fs';
import { Command } from 'commander';
import type { Mmdb } from '@mmdb/client';
import { parse } from 'smol-toml';
import { action, type Io } from '../context';
import { columnsOf, csvField } from '../table';

const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;

/**
 * Pages of rows in primary-key order. A one-column key pages by key (`WHERE k > $1`: each page
 * costs the same however deep); a composite key falls back to LIMIT/OFFSET.
 */
export async function* exportRows(db: Mmdb, schema: string, page: number): AsyncGenerator<Record<string, unknown>[]> {
  const m = parse(await db.schemas.get(schema)) as { primary_key?: string[] };
  const key = m.primary_key ?? [];
  const order = key.map(ident).join(', ');
  const [ns, table] = schema.split('.');
  const from = `SELECT * FROM ${ident(ns)}.${ident(table)}`;
  if (key.length === 1) {
    let last: unknown;
    for (let first = true; ; first = false) {
      const r = first
        ? await db.sql<Record<string, unknown>>(`${from} ORDER BY ${order} LIMIT ${page}`)
        : await db.sql<Record<string, unknown>>(`${from} WHERE ${order} > $1 ORDER BY ${order} LIMIT ${page}`, [last]);
      if (r.rows.length) yield r.rows;
      if (r.rows.length < page) return;
      last = r.rows[r.rows.length - 1][key[0]];
    }
  }
  for (let offset = 0; ; offset += page) {
    const r = await db.sql<Record<string, unknown>>(`${from}${order ? ` ORDER BY ${order}` : ''} LIMIT ${page} OFFSET ${offset}`);
    if (r.rows.length) yield r.rows;
    if (r.rows.length < page) return;
  }
}

export function exportCommand(io: Io): Command {
  return new Command('export')
    .description('write every row of a schema (primary-key order) as NDJSON, CSV or JSON')
    .argument('<schema>', 'schema id')
    .option('-f, --format <format>', 'ndjson | csv | json', 'ndjson')
    .option('-o, --output <file>', 'write here instead of stdout')
    .option('--page <rows>', 'rows per request', (v) => parseInt(v, 10), 5000)
    .action(
      action(io, async (db, cmd, schema: string) => {
        const o = cmd.opts() as { format: string; output?: string; page: number };
        const out = o.output ? fs.createWriteStream(o.output) : io.out;
        let n = 0;
        let cols: string[] | undefined;
        if (o.format === 'json') out.write('[');
        for await (const rows of exportRows(db, schema, o.page)) {
          for (const r of rows) {
            if (o.format === 'csv') {
              if (!cols) out.write((cols = columnsOf(rows)).map(csvField).join(',') + '\n');
              out.write(cols.map((c) => csvField(r[c])).join(',') + '\n');
            } else if (o.format === 'json') out.write((n ? ',\n' : '\n') + JSON.stringify(r));
            else out.write(JSON.stringify(r) + '\n');
            n++;
          }
        }
        if (o.format === 'json') out.write('\n]\n');
        if (o.output) {
          await new Promise((r) => (out as fs.WriteStream).end(r));
          io.err.write(`exported ${n} rows to ${o.output}\n`);
        }
      }),
    );
}
