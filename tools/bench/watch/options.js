/**
 * The load options the watch benchmarks share (bench.js, inproc.js): `--subscribers` streams
 * over `--tables` tables, `--rate` rows/s for `--duration` s, coalescing window `--window` ms.
 */
'use strict';
const { numberOption } = require('../request');

function loadOptions(args, { duration }) {
  const opt = (name, def) => numberOption(args, name, def);
  return { SUBS: opt('subscribers', 200), TABLES: opt('tables', 10), RATE: opt('rate', 2000), DURATION: opt('duration', duration), WINDOW: opt('window', 50) };
}

module.exports = { loadOptions };
