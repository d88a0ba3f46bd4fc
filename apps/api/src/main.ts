import 'reflect-metadata';
import { ConfigError, loadConfig } from './config';
import { startServer } from './server';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`configuration error: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  const server = await startServer(config);
  // One line scripts and tests wait for.
  process.stdout.write(`listening on ${server.url}\n`);
}

main().catch((e) => {
  process.stderr.write(`fatal: ${(e as Error)?.stack ?? e}\n`);
  process.exit(1);
});
