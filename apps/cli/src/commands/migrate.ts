/** `mmdb migrate …`: submit a migration (with a progress bar until it is ready), cut over, abort, list, audit. */
import * as fs from 'fs';
import { Command } from 'commander';
import { SingleBar } from 'cli-progress';
import { parse as parseToml } from 'smol-toml';
import type { Mmdb, models } from '@mmdb/client';
import { action, json, type Io } from '../context';
import { renderTable } from '../table';

type Migration = models.Migration;
const FINAL = new Set(['ReadyToCutover', 'Completed', 'Aborted', 'Failed']);

/** Polls a migration until it is ready, done or aborted, drawing its progress. */
export async function follow(db: Mmdb, io: Io, id: string, everyMs = 500): Promise<Migration> {
  // rows/s and ETA are the server's (progress.rate, progress.eta_s): it sees every batch
  const bar = new SingleBar({ format: 'migrate |{bar}| {percentage}% | {value}/{total} rows | {rate} rows/s | ETA {eta_s} | {state}', stream: io.err as NodeJS.WriteStream, hideCursor: true });
  const fields = (x: Migration) => ({ state: x.state, rate: Math.round(x.progress.rate), eta_s: x.progress.eta_s == null ? '-' : `${Math.ceil(x.progress.eta_s)}s` });
  let m = await db.migrations.get(id);
  bar.start(Math.max(m.progress.total, 1), m.progress.done, fields(m));
  try {
    while (!FINAL.has(m.state)) {
      await new Promise((r) => setTimeout(r, everyMs));
      m = await db.migrations.get(id);
      if (m.progress.total) bar.setTotal(m.progress.total);
      bar.update(m.progress.done, fields(m));
    }
    bar.setTotal(Math.max(m.progress.total, 1));
    bar.update(m.state === 'ReadyToCutover' || m.state === 'Completed' ? Math.max(m.progress.total, 1) : m.progress.done, fields(m));
  } finally {
    bar.stop();
  }
  return m;
}

export function migrateCommand(io: Io): Command {
  const c = new Command('migrate').description('online schema migrations: submit, follow, cutover, abort');
  c.command('submit')
    .description('start a migration of one table to the manifest in a TOML file (or by the operations in a JSON file), and follow it until ready')
    .argument('<file>', 'the target manifest (TOML), or a JSON array of operations (then --schema)')
    .option('--schema <id>', 'the table to migrate (default: namespace.table of the manifest)')
    .option('--auto-cutover', 'cut over by itself once ready')
    .option('--max-rows-per-s <n>', 'throttle: ceiling on copied rows per second', (v) => parseInt(v, 10))
    .option('--batch-size <n>', 'throttle: the most rows in one backfill frame', (v) => parseInt(v, 10))
    .option('--slice-ms <ms>', 'throttle: time budget of one backfill frame (ms)', (v) => Number(v))
    .option('--no-wait', 'return at once')
    .option('--cutover', 'cut over once ready (after following it)')
    .option('--poll <ms>', 'how often to ask for progress', (v) => parseInt(v, 10), 500)
    .action(
      action(io, async (db, cmd, file: string) => {
        const o = cmd.opts() as { schema?: string; autoCutover?: boolean; maxRowsPerS?: number; batchSize?: number; sliceMs?: number; wait: boolean; cutover?: boolean; poll: number };
        const text = fs.readFileSync(file, 'utf8');
        const ops = text.trimStart().startsWith('[');
        const schema = o.schema ?? (ops ? undefined : manifestId(text));
        if (!schema) throw new Error('--schema is needed with a file of operations');
        const given = { max_rows_per_s: o.maxRowsPerS, batch_size: o.batchSize, slice_ms: o.sliceMs };
        const throttle = Object.values(given).some((v) => v !== undefined) ? Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) : undefined;
        let m = await db.migrations.submit({ schema, ...(ops ? { operations: JSON.parse(text) } : { manifest: text }), auto_cutover: o.autoCutover, throttle });
        io.err.write(`migration ${m.id}: ${m.state}\n`);
        if (o.wait) m = await follow(db, io, m.id, o.poll);
        if (o.cutover && m.state === 'ReadyToCutover') m = await db.migrations.cutover(m.id);
        json(io, m);
        failed(io, m);
      }),
    );
  c.command('status')
    .description('one migration (and, with --follow, its progress until it is ready or ends)')
    .argument('<id>')
    .option('--follow', 'follow with a progress bar until ready')
    .option('--poll <ms>', 'how often to ask for progress', (v) => parseInt(v, 10), 500)
    .action(
      action(io, async (db, cmd, id: string) => {
        const o = cmd.opts() as { follow?: boolean; poll: number };
        const m = o.follow ? await follow(db, io, id, o.poll) : await db.migrations.get(id);
        json(io, m);
        failed(io, m);
      }),
    );
  c.command('cutover')
    .description('switch reads and writes to the new shape (only from ReadyToCutover)')
    .argument('<id>')
    .action(action(io, async (db, _cmd, id: string) => json(io, await db.migrations.cutover(id))));
  c.command('abort')
    .description('abort a migration before its cutover (the old shape stays)')
    .argument('<id>')
    .action(action(io, async (db, _cmd, id: string) => json(io, await db.migrations.abort(id))));
  c.command('list')
    .description('every migration, newest first')
    .action(action(io, async (db) => void io.out.write(renderTable((await db.migrations.all()).map((m) => ({ id: m.id, schema: m.schema, state: m.state, done: m.progress.done, total: m.progress.total }))))));
  c.command('audit')
    .description('the audit log of state transitions, oldest first')
    .option('--migration <id>', 'one migration only')
    .action(
      action(io, async (db, cmd) => {
        const o = cmd.opts() as { migration?: string };
        const entries = [];
        let after: string | undefined;
        do {
          const page = await db.migrations.audit({ migration: o.migration, limit: 1000, after });
          entries.push(...page.entries);
          after = page.next ?? undefined;
        } while (after);
        io.out.write(renderTable(entries));
      }),
    );
  return c;
}

/** A Failed migration: its reason and first offending keys on stderr, exit code 1. */
function failed(io: Io, m: Migration): void {
  if (m.state !== 'Failed') return;
  io.err.write(`error: migration ${m.id} failed: ${m.reason ?? 'no reason given'}${m.offending_keys.length ? ` (offending keys ${JSON.stringify(m.offending_keys)})` : ''}\n`);
  process.exitCode = 1;
}

/** `namespace.table` of a TOML manifest. */
export function manifestId(toml: string): string {
  const m = parseToml(toml) as { namespace?: unknown; table?: unknown };
  if (typeof m.namespace !== 'string' || typeof m.table !== 'string') throw new Error('the manifest names no namespace and table: pass --schema');
  return `${m.namespace}.${m.table}`;
}
