/** Schemas and SQL generators for untrusted.property.test.ts. */
import fc from 'fast-check';
import { manifest } from './manifests';

export const OWNERS_FZ = manifest('fz.owners', ['id'], { id: 'str' });

/** Every kind of derived entry a write can touch: unique index, foreign key, check, json, full-text, vector. */
export const ITEMS_FZ = manifest('fz.items', ['id'], { id: 'i64', name: 'str', price: 'f64', owner: 'str', tags: 'json', doc: 'str', emb: { ty: 'vector', dim: 3 } }, `[[indexes]]
name = "by_name"
columns = ["name"]
unique = true
[[foreign_keys]]
name = "owned_by"
columns = ["owner"]
references = "fz.owners"
[[checks]]
name = "price_ok"
expr = "price >= 0"
[vector]
column = "emb"
dim = 3
metric = "cosine"
[[fulltext]]
field = "doc"
`);

export const SQL_TOKENS = [
  'SELECT', 'INSERT', 'INTO', 'VALUES', 'UPDATE', 'SET', 'DELETE', 'FROM', 'WHERE', 'AND', 'OR', 'NOT', 'NULL', 'JOIN', 'LEFT', 'ON',
  'GROUP', 'BY', 'ORDER', 'HAVING', 'LIMIT', 'OFFSET', 'WITH', 'RECURSIVE', 'UNION', 'ALL', 'AS', 'CAST', 'CASE', 'WHEN', 'THEN', 'ELSE',
  'END', 'IN', 'EXISTS', 'LIKE', 'BETWEEN', 'IS', 'BEGIN', 'COMMIT', 'ROLLBACK', 'CREATE', 'TABLE', 'ALTER', 'DROP', 'INDEX', 'OVER',
  'PARTITION', 'RETURNING', 'DISTINCT', 'COLLATE', 'NOCASE', '(', ')', ',', '*', '+', '-', '/', '%', '=', '<', '>', '<>', '<=', '||',
  ';', '?', '$1', '$2', '<->', '<=>', '@@', '->', '->>', '.', 'fz.items', 'fz.owners', 'fz.none', 'id', 'name', 'price', 'tags', 'doc',
  'emb', 'owner', 'x', 'count(*)', 'sum(price)', 'json_extract(tags, \'$.n\')', 'fts_search(\'fz.items\', \'doc\', \'item\')', 'row_number()',
];

export const sqlLiteral = fc.oneof(
  fc.integer().map(String),
  fc.constantFrom('9223372036854775807', '-9223372036854775808', '9223372036854775808', '1e308', '1e999', '-0', '0x10', 'NULL', "'[1,2,3]'", "'[0,0,0]'", "'[1,2]'", "'o1'", "'o9'", "'{\"a\":1}'", "''''", "'\\'"),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => String(d)),
  fc.string({ maxLength: 12 }).map((s) => `'${s.replace(/'/g, "''")}'`),
);

const COLS = ['id', 'name', 'price', 'owner', 'tags', 'doc', 'emb', 'nope'];
const FUNCS = ['abs', 'length', 'upper', 'lower', 'coalesce', 'json_extract', 'json_type', 'typeof', 'substr', 'round', 'max', 'min', 'nullif', 'json_array', 'hex', 'zeroblob', 'instr', 'printf'];

/** A random SQL expression over fz.items' columns: operators, functions, CASE, subqueries, casts. */
export const sqlExpr: fc.Arbitrary<string> = fc.letrec<{ e: string }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    sqlLiteral,
    fc.constantFrom(...COLS),
    fc.tuple(tie('e'), fc.constantFrom('+', '-', '*', '/', '%', '=', '<', '>=', '<>', 'AND', 'OR', '||', 'LIKE', 'IS', 'IS NOT', '->', '->>', '<->', '<=>'), tie('e')).map(([a, o, b]) => `(${a} ${o} ${b})`),
    fc.tuple(fc.constantFrom(...FUNCS), fc.array(tie('e'), { maxLength: 3 })).map(([f, a]) => `${f}(${a.join(', ')})`),
    fc.tuple(tie('e'), tie('e'), tie('e')).map(([a, b, c]) => `CASE WHEN ${a} THEN ${b} ELSE ${c} END`),
    fc.tuple(tie('e'), fc.constantFrom('INTEGER', 'REAL', 'TEXT', 'NUMERIC', 'BLOB', 'vector')).map(([a, t]) => `CAST(${a} AS ${t})`),
    fc.tuple(tie('e'), tie('e')).map(([a, b]) => `${a} IN (SELECT id FROM fz.items WHERE ${b})`),
    tie('e').map((a) => `NOT ${a}`),
    tie('e').map((a) => `(SELECT count(*) FROM fz.owners WHERE id = ${a})`),
  ),
})).e;
