/**
 * The SQL benchmark's schema, data and fixed query set: shared by tools/bench/sql (one size) and
 * tools/bench/curve (the same queries at several sizes).
 */
export const QUERIES: [string, string][] = [
  ['pk lookup', 'SELECT * FROM orders WHERE id = 77777'],
  ['pk range', 'SELECT count(*), sum(amount) FROM orders WHERE id > 5000 AND id <= 6000'],
  ['3-table join + group by', 'SELECT c.region, p.category, count(*), sum(o.amount) FROM orders o JOIN customers c ON o.customer_id = c.id JOIN products p ON o.product_id = p.id GROUP BY c.region, p.category'],
  ['order by … limit', 'SELECT id, amount FROM orders ORDER BY amount DESC LIMIT 10'],
  ['correlated subquery', 'SELECT c.id FROM customers c WHERE c.id < 200 AND (SELECT count(*) FROM orders o WHERE o.customer_id = c.id) > 10'],
  ['recursive CTE', 'WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 10000) SELECT sum(x) FROM n'],
];

export const DDL = [
  'CREATE TABLE customers(id INTEGER PRIMARY KEY, region TEXT)',
  'CREATE TABLE products(id INTEGER PRIMARY KEY, category TEXT)',
  'CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER, product_id INTEGER, amount REAL)',
];

const REGIONS = ['north', 'south', 'east', 'west'];

/** `(id, region)` tuples of the n / 10 customers of an n-order data set. */
export const customerRows = (n: number): string[] => Array.from({ length: n / 10 }, (_, i) => `(${i + 1}, '${REGIONS[i % 4]}')`);
/** `(id, category)` tuples of the 100 products. */
export const productRows = (): string[] => Array.from({ length: 100 }, (_, i) => `(${i + 1}, 'cat${i % 10}')`);
/** The values of order i (0-based) of an n-order data set. */
export const orderValues = (i: number, n: number): [number, number, number, number] => [i + 1, ((i * 7919) % (n / 10)) + 1, (i % 100) + 1, ((i * 31) % 1000) / 10];
/** Order i as a `(id, customer_id, product_id, amount)` tuple. */
export const orderRow = (i: number, n: number): string => `(${orderValues(i, n).join(', ')})`;
/** Customer i's region. */
export const regionOf = (i: number): string => REGIONS[i % 4];
