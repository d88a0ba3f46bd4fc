#!/usr/bin/env node
// Runs the many-table join benchmark: node tools/bench/sql/joins.js (SIZES=8,16,32,64 ROWS=4 REPS=20)
const path = require('path');
// TypeScript on the fly, @mmdb/* mapped to the libs' sources by tsconfig.base.json's paths.
process.env.SWC_NODE_PROJECT = process.env.SWC_NODE_PROJECT || path.join(__dirname, '../../..', 'tsconfig.base.json');
require('@swc-node/register');
require('./joins.ts');
