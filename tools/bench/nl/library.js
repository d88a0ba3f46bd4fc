// The nlbench library manifests with what extras.json declares (foreign keys, full-text
// fields, relations with their phrases, display columns): the same adaptation eval.py makes.
'use strict';
const fs = require('fs');
const path = require('path');

const ORDER = ['authors', 'books', 'branches', 'members', 'follows', 'loans', 'reviews'];

function adapt(dir, table) {
  const extras = JSON.parse(fs.readFileSync(path.join(dir, 'extras.json'), 'utf8'));
  const id = `${extras.namespace}.${table}`;
  let t = fs.readFileSync(path.join(dir, 'manifests', `${id}.toml`), 'utf8');
  if (extras.labels[id]) t = t.replace(/^primary_key = .*\n/m, (m) => `${m}label = "${extras.labels[id]}"\n`);
  for (const fk of extras.fks.filter((x) => x.table === id)) {
    t += `\n[[foreign_keys]]\nname = "fk_${fk.column}"\ncolumns = ["${fk.column}"]\nreferences = "${fk.ref_table}"\nref_columns = ["id"]\n`;
  }
  for (const f of extras.fts.filter((x) => x.table === id)) t += `\n[[fulltext]]\nfield = "${f.field}"\n`;
  for (const r of extras.relations) {
    const phrases = `forward = "${r.forward}"\nreverse = "${r.reverse}"\n`;
    if (r.via === id) t += `\n[[relations]]\nname = "${r.name}"\ntarget = "${r.target}"\ncolumns = ["${r.column}"]\nsource = "${r.source}"\nsource_columns = ["${r.source_column}"]\n${phrases}`;
    else if (!r.via && r.source === id) t += `\n[[relations]]\nname = "${r.name}"\ntarget = "${r.target}"\ncolumns = ["${r.column}"]\n${phrases}`;
  }
  return t;
}

module.exports = { adapt, ORDER };
