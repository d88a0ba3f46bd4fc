#!/usr/bin/env node
// Many-table join generator (the shape of SQLite's select5.test): N tables of a few rows,
// `FROM t1, …, tN WHERE …` with the tables and the equalities each in a shuffled order, as a chain
// (t_i joined to t_{i+1}) or a star (t1 joined to every other). Used by libs/sql/test/many-joins.test.ts,
// the SQL benchmark, and by hand: `node tools/sqllogictest/scripts/many-joins.js 16 chain [seed]`
// prints the setup script and the query.
function rng(seed) {
  let s = seed >>> 0 || 1;
  return (n) => { s = (s * 1103515245 + 12345) & 0x7fffffff; return (s >>> 8) % n; };
}
function shuffle(xs, r) {
  const a = xs.slice();
  for (let i = a.length - 1; i > 0; i--) { const j = r(i + 1); [a[i], a[j]] = [a[j], a[i]]; }
  return a;
}
/** { setup: string[], query: string } for n tables joined as 'chain' or 'star'. */
function manyJoins(n, shape = 'chain', seed = 1, rows = 4) {
  const r = rng(seed);
  const setup = [];
  for (let i = 1; i <= n; i++) {
    setup.push(`CREATE TABLE t${i}(a${i} INTEGER PRIMARY KEY, b${i} INTEGER, x${i} TEXT)`);
    const vals = [];
    for (let k = 1; k <= rows; k++) vals.push(`(${k}, ${1 + r(rows)}, 'v${i}_${k}')`);
    setup.push(`INSERT INTO t${i} VALUES ${vals.join(', ')}`);
  }
  const eqs = [];
  for (let i = 2; i <= n; i++) {
    const j = shape === 'star' ? 1 : i - 1;
    eqs.push(r(2) ? `b${j} = a${i}` : `a${i} = b${j}`);
  }
  const from = shuffle([...Array(n)].map((_, i) => `t${i + 1}`), r);
  const sel = shuffle([...Array(n)].map((_, i) => `x${i + 1}`), r).slice(0, 4);
  return { setup, query: `SELECT ${sel.join(', ')} FROM ${from.join(', ')} WHERE ${shuffle(eqs, r).join(' AND ')}` };
}
module.exports = { manyJoins };
if (require.main === module) {
  const [n = '8', shape = 'chain', seed = '1'] = process.argv.slice(2);
  const g = manyJoins(Number(n), shape, Number(seed));
  console.log(g.setup.join(';\n') + ';\n' + g.query + ';');
}
