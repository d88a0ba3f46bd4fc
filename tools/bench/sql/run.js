#!/usr/bin/env node
// Runs the SQL benchmark: node tools/bench/sql/run.js (ROWS=100000)
const path = require('path');
// TypeScript on the fly, @mmdb/* mapped to the libs' sources by tsconfig.base.json's paths.
process.env.SWC_NODE_PROJECT = process.env.SWC_NODE_PROJECT || path.join(__dirname, '../../..', 'tsconfig.base.json');
require('@swc-node/register');
require('./bench.ts');
