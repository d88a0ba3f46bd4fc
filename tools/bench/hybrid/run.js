#!/usr/bin/env node
// Runs the hybrid (multi-model) benchmark: npm run build && node tools/bench/hybrid/run.js (README.md)
const path = require('path');
process.env.SWC_NODE_PROJECT = process.env.SWC_NODE_PROJECT || path.join(__dirname, '../../..', 'tsconfig.base.json');
require('@swc-node/register');
require('./bench.ts');
