// The benchmarks' full-text table: rows of bench.docs whose `body` is a [[fulltext]] field. Its own
// module (no requires) so that children running the TypeScript sources (tools/bench/curve) share it.
'use strict';

const manifest = ({ analyzer = 'english', k1 = 1.2, b = 0.75 } = {}) => `
namespace = "bench"
table = "docs"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "str"
required = true
[[columns]]
name = "body"
ty = "str"
[[fulltext]]
field = "body"
analyzer = "${analyzer}"
k1 = ${k1}
b = ${b}
`;

module.exports = { manifest };
