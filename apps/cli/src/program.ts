/** The `mmdb` program: global connection flags, and one sub-command per area. */
import { Command } from 'commander';
import type { Io } from './context';
import { sqlCommand } from './commands/sql';
import { importCommand } from './commands/import';
import { exportCommand } from './commands/export';
import { migrateCommand } from './commands/migrate';
import { askCommand, profileCommand, schemaCommand, tenantCommand, tokenCommand, watchCommand } from './commands/misc';

export function program(io: Io, stdin: NodeJS.ReadableStream, version: string): Command {
  const p = new Command('mmdb')
    .description('the mmdb command line')
    .version(version)
    .option('--url <url>', 'server base URL (env MMDB_URL; default https://127.0.0.1:8443)')
    .option('--token <token>', 'bearer token (env MMDB_TOKEN)')
    .option('--tenant <ulid>', 'tenant (env MMDB_TENANT)')
    .option('--ca <file>', 'PEM file of the CA / self-signed certificate to trust (env MMDB_CA_FILE)')
    .option('-k, --insecure', 'accept any certificate: a local self-signed server only (env MMDB_INSECURE=1)')
    .option('--profile <name>', 'profile of the config file (env MMDB_PROFILE; default "default")')
    .showHelpAfterError()
    .configureOutput({ writeOut: (s) => io.out.write(s), writeErr: (s) => io.err.write(s) })
    .addHelpText('after', '\nConnection: flags, then MMDB_* environment variables, then the profile file ($MMDB_CONFIG or ~/.config/mmdb/config.toml).');
  for (const c of [sqlCommand(io, stdin), askCommand(io), importCommand(io, stdin), exportCommand(io), watchCommand(io), schemaCommand(io), migrateCommand(io), tenantCommand(io), tokenCommand(io), profileCommand(io)]) {
    p.addCommand(c);
  }
  return p;
}
