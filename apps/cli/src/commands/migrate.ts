/** `mmdb migrate …`: submit a migration (with a progress bar until it is ready), cut over, abort, list, audit. */
import * as fs from 'fs';
import { Command } from 'commander';
import { SingleBar } from 'cli-progress';
import type { Mmdb, models } from '@mmdb/client';
import { action, json, type Io } from '../context';
import { renderTable } from '../table';

type Migration = models.Migration;
const FINAL = new Set(['ReadyToCutover', 'Completed', 'Aborted', 'Failed']);

/** Polls a migration until it is ready, done or aborted, drawing its progress. */
export async function follow(db: Mmdb, io: Io, id: string, everyMs = 500): Promise<Migration> {
  const bar = new SingleBar({ format: 'migrate |{bar}| {percentage}% | {value}/{total} rows | {state}', stream: io.err as NodeJS.WriteStream, hideCursor: true });
  let m = await db.migrations.get(id);
  bar.start(m.progress?.total ?? 1, m.progress?.done ?? 0, { state: m.state });
  try {
    while (!FINAL.has(m.state)) {
      await new Promise((r) => setTimeout(r, everyMs));
      m = await db.migrations.get(id);
      if (m.progress?.total) bar.setTotal(m.progress.total);
      bar.update(m.progress?.done ?? 0, { state: m.state });
    }
    if (m.progress?.total) bar.update(m.progress.total, { state: m.state });
  } finally {
    bar.stop();
  }
  return m;
}

export function migrateCommand(io: Io): Command {
  const c = new Command('migrate').description('online schema migrations: submit, follow, cutover, abort');
  c.command('submit')
    .description('start a migration to the manifest in a TOML file, and follow it until ready')
    .argument('<file>', 'the target manifest')
    .option('--auto-cutover', 'cut over by itself once ready')
    .option('--no-wait', 'return at once')
    .option('--cutover', 'cut over once ready (after following it)')
    .option('--poll <ms>', 'how often to ask for progress', (v) => parseInt(v, 10), 500)
    .action(
      action(io, async (db, cmd, file: string) => {
        const o = cmd.opts() as { autoCutover?: boolean; wait: boolean; cutover?: boolean; poll: number };
        let m = await db.migrations.submit({ toml: fs.readFileSync(file, 'utf8'), auto_cutover: o.autoCutover });
        io.err.write(`migration ${m.id}: ${m.state}\n`);
        if (o.wait) m = await follow(db, io, m.id, o.poll);
        if (o.cutover && m.state === 'ReadyToCutover') m = await db.migrations.cutover(m.id);
        json(io, m);
      }),
    );
  c.command('status')
    .argument('<id>')
    .option('--follow', 'follow with a progress bar until ready')
    .option('--poll <ms>', 'how often to ask for progress', (v) => parseInt(v, 10), 500)
    .action(
      action(io, async (db, cmd, id: string) => {
        const o = cmd.opts() as { follow?: boolean; poll: number };
        json(io, o.follow ? await follow(db, io, id, o.poll) : await db.migrations.get(id));
      }),
    );
  c.command('cutover')
    .argument('<id>')
    .action(action(io, async (db, _cmd, id: string) => json(io, await db.migrations.cutover(id))));
  c.command('abort')
    .argument('<id>')
    .action(action(io, async (db, _cmd, id: string) => json(io, await db.migrations.abort(id))));
  c.command('list').action(action(io, async (db) => void io.out.write(renderTable((await db.migrations.list()).map((m) => ({ id: m.id, state: m.state, schema: m.schema ?? '' }))))));
  c.command('audit').action(action(io, async (db) => void io.out.write(renderTable(await db.migrations.audit()))));
  return c;
}
