#!/usr/bin/env node
import { program } from './program';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { version } = require('../package.json') as { version: string };

program({ out: process.stdout, err: process.stderr, env: process.env }, process.stdin, version)
  .parseAsync(process.argv)
  .catch((e: Error) => {
    process.stderr.write(`error: ${e.message}\n`);
    process.exitCode = 1;
  });
