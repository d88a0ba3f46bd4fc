#!/usr/bin/env node
// Runs sqllogictest files through the engine in-process: node tools/sqllogictest/slt.js <file.test>...
const path = require('path');
// TypeScript on the fly, @mmdb/* mapped to the libs' sources by tsconfig.base.json's paths.
process.env.SWC_NODE_PROJECT = process.env.SWC_NODE_PROJECT || path.join(__dirname, '../..', 'tsconfig.base.json');
require('@swc-node/register');
require('./src/cli.ts');
