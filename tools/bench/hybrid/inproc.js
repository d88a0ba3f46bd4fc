#!/usr/bin/env node
// The hybrid statements in process: node tools/bench/hybrid/inproc.js (README.md)
const path = require('path');
process.env.SWC_NODE_PROJECT = process.env.SWC_NODE_PROJECT || path.join(__dirname, '../../..', 'tsconfig.base.json');
require('@swc-node/register');
require('./inproc.ts');
