/** What every command needs: the client built from flags/env/profile, output, and error printing. */
import { Command } from 'commander';
import { Mmdb, MmdbError } from '@mmdb/client';
import { resolveConn, type GlobalFlags } from './config';

export interface Io {
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
}

export function clientFor(cmd: Command, io: Io): Mmdb {
  const flags = cmd.optsWithGlobals() as GlobalFlags;
  const conn = resolveConn(flags, io.env);
  const db = new Mmdb({ url: conn.url, token: conn.token, tenant: conn.tenant, caFile: conn.caFile, insecure: conn.insecure });
  db.on('warning', (w) => io.err.write(`warning: ${w.message}\n`));
  return db;
}

export function describeError(e: unknown): string {
  if (e instanceof MmdbError) {
    const details = Object.keys(e.details).length ? ` ${JSON.stringify(e.details)}` : '';
    return `error: ${e.code}: ${e.message}${details}${e.requestId ? ` (request ${e.requestId})` : ''}`;
  }
  return `error: ${(e as Error)?.message ?? String(e)}`;
}

/** Wraps an action: runs it, closes the client, prints an error and sets exit code 1 on failure. */
export function action<A extends unknown[]>(io: Io, fn: (db: Mmdb, cmd: Command, ...args: A) => Promise<void>) {
  return async (...args: unknown[]) => {
    const cmd = args[args.length - 1] as Command;
    const db = clientFor(cmd, io);
    try {
      await fn(db, cmd, ...(args.slice(0, -1) as A));
    } catch (e) {
      io.err.write(describeError(e) + '\n');
      if (!process.exitCode) process.exitCode = 1; // a command may have set a more precise one (130: interrupted)
    } finally {
      await db.close();
    }
  };
}

export function json(io: Io, v: unknown): void {
  io.out.write(JSON.stringify(v, null, 2) + '\n');
}
