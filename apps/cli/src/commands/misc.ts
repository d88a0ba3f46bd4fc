/** `mmdb ask`, `mmdb watch`, `mmdb schema …`, `mmdb tenant …`, `mmdb token …`, `mmdb profile …`. */
import * as fs from 'fs';
import * as path from 'path';
import { Command } from 'commander';
import { action, json, type Io } from '../context';
import { configPath, readProfiles, writeProfile } from '../config';
import { render, renderTable, type Format } from '../table';

export function askCommand(io: Io): Command {
  return new Command('ask')
    .description('ask a question in English (compiled to a cached plan)')
    .argument('<question>', 'the question')
    .option('--schemas <ids...>', 'only these schemas are visible')
    .option('--show-plan', 'print the compiled plan')
    .option('--direction <dir>', 'forward | reverse, for a self-relation hop')
    .option('-f, --format <format>', 'table | json | ndjson | csv', 'table')
    .action(
      action(io, async (db, cmd, nl: string) => {
        const o = cmd.opts() as { schemas?: string[]; showPlan?: boolean; direction?: 'forward' | 'reverse'; format: Format };
        const r = await db.ask(nl, { schemas: o.schemas, show_plan: o.showPlan, direction: o.direction });
        if (r.interpretation) io.err.write(`${r.interpretation}\n`);
        io.out.write(render(r.rows as Record<string, unknown>[], o.format));
        if (o.showPlan) json(io, r.plan);
        io.err.write(`(plan cache: ${r.cache})\n`);
      }),
    );
}

export function watchCommand(io: Io): Command {
  return new Command('watch')
    .description('follow the changes of an English query (SSE), one JSON line per change event; reconnects without repeats')
    .argument('<question>', 'what to watch')
    .option('--last-event-id <id>', 'resume after this event')
    .option('-n, --limit <events>', 'stop after this many printed events', (v) => parseInt(v, 10))
    .option('--all-events', "print the server's position events too (the resume points between changes)")
    .action(
      action(io, async (db, cmd, nl: string) => {
        const o = cmd.opts() as { lastEventId?: string; limit?: number; allEvents?: boolean };
        const ctl = new AbortController();
        const stop = () => ctl.abort();
        process.once('SIGINT', stop);
        let n = 0;
        try {
          for await (const e of db.watch(nl, { lastEventId: o.lastEventId, signal: ctl.signal })) {
            if (e.event === 'position' && !o.allEvents) continue;
            io.out.write(JSON.stringify({ id: e.id, event: e.event, data: e.data }) + '\n');
            if (o.limit !== undefined && ++n >= o.limit) break;
          }
        } catch (e) {
          if (!ctl.signal.aborted) throw e;
        } finally {
          process.removeListener('SIGINT', stop);
        }
      }),
    );
}

export function schemaCommand(io: Io): Command {
  const c = new Command('schema').description('list, pull and push TOML manifests');
  c.command('list')
    .description('the schema ids')
    .action(action(io, async (db) => void io.out.write((await db.schemas.list()).sort().join('\n') + '\n')));
  c.command('pull')
    .description('print a manifest, or write every manifest into a directory')
    .argument('[id]', 'schema id (all when absent, with --dir)')
    .option('-d, --dir <dir>', 'write <id>.toml files here')
    .action(
      action(io, async (db, cmd, id?: string) => {
        const o = cmd.opts() as { dir?: string };
        const ids = id ? [id] : await db.schemas.list();
        if (!o.dir && ids.length === 1) return void io.out.write(await db.schemas.get(ids[0]));
        if (!o.dir) throw new Error('give a schema id, or --dir to write them all');
        fs.mkdirSync(o.dir, { recursive: true });
        for (const x of ids) fs.writeFileSync(path.join(o.dir, `${x}.toml`), await db.schemas.get(x));
        io.err.write(`wrote ${ids.length} manifests to ${o.dir}\n`);
      }),
    );
  c.command('push')
    .description('register or update manifests from TOML files')
    .argument('<files...>', 'TOML files')
    .action(
      action(io, async (db, _cmd, files: string[]) => {
        for (const f of files) {
          const r = await db.schemas.put(fs.readFileSync(f, 'utf8'));
          io.out.write(`${r.created ? 'created' : 'updated'} ${r.id}\n`);
        }
      }),
    );
  c.command('drop')
    .description('drop a schema with its rows')
    .argument('<id>')
    .action(action(io, async (db, _cmd, id: string) => void (await db.schemas.delete(id), io.out.write(`dropped ${id}\n`))));
  return c;
}

export function tenantCommand(io: Io): Command {
  const c = new Command('tenant').description('operator: list and create tenants');
  c.command('list').description('every tenant and when it was made').action(action(io, async (db) => void io.out.write(renderTable((await db.tenants.list()).map((t) => ({ tenant: t.tenant, created: new Date(t.created).toISOString() }))))));
  c.command('create')
    .description('provision a tenant; prints its first token once')
    .action(action(io, async (db) => json(io, await db.tenants.create())));
  return c;
}

export function tokenCommand(io: Io): Command {
  const c = new Command('token').description('list, issue, revoke and rotate the tenant\'s tokens');
  const when = (ms: number | null) => (ms === null ? 'never' : new Date(ms).toISOString());
  c.command('list').description("the tenant's live tokens (ids, never secrets)").action(action(io, async (db) => void io.out.write(renderTable((await db.tokens.list()).map((t) => ({ token_id: t.token_id, created: when(t.created), expires: when(t.expires_at) }))))));
  c.command('issue')
    .description('a new token: its secret is printed once')
    .option('--ttl <seconds>', 'expires after this many seconds', (v) => parseInt(v, 10))
    .action(action(io, async (db, cmd) => json(io, await db.tokens.issue({ ttl_seconds: (cmd.opts() as { ttl?: number }).ttl }))));
  c.command('revoke')
    .description('revoke a token at once (idempotent)')
    .argument('<token_id>')
    .action(action(io, async (db, _cmd, id: string) => json(io, await db.tokens.revoke(id))));
  c.command('rotate')
    .description('a new token in place of this one, which keeps working for --grace seconds')
    .argument('<token_id>')
    .option('--grace <seconds>', 'the old token keeps working this long (default 300)', (v) => parseInt(v, 10))
    .option('--ttl <seconds>', 'the new token expires after this long', (v) => parseInt(v, 10))
    .action(
      action(io, async (db, cmd, id: string) => {
        const o = cmd.opts() as { grace?: number; ttl?: number };
        json(io, await db.tokens.rotate(id, { grace_seconds: o.grace, ttl_seconds: o.ttl }));
      }),
    );
  return c;
}

export function profileCommand(io: Io): Command {
  const c = new Command('profile').description(`manage connection profiles (${configPath(io.env)})`);
  c.command('set')
    .description('create or update a profile from the global flags (--url, --token, --tenant, --ca, --insecure)')
    .argument('[name]', 'profile name', 'default')
    .action((name: string, _o: unknown, cmd: Command) => {
      const g = cmd.optsWithGlobals() as { url?: string; token?: string; tenant?: string; ca?: string; insecure?: boolean };
      writeProfile(configPath(io.env), name, { url: g.url, token: g.token, tenant: g.tenant, ca_file: g.ca ? path.resolve(g.ca) : undefined, insecure: g.insecure || undefined });
      io.out.write(`saved profile ${name} in ${configPath(io.env)}\n`);
    });
  c.command('list').description('the profiles of the profile file').action(() => {
    const all = readProfiles(configPath(io.env));
    io.out.write(renderTable(Object.entries(all).map(([name, p]) => ({ name, url: p.url ?? '', tenant: p.tenant ?? '', token: p.token ? '(set)' : '' }))));
  });
  return c;
}
