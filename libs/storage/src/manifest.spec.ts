import { DbError } from '@mmdb/core';
import { parseManifest } from './manifest';

const BASE = `namespace = "shop"
table = "items"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "str"
required = true
[[columns]]
name = "n"
ty = "i64"
[[columns]]
name = "body"
ty = "str"
[[columns]]
name = "emb"
ty = "vector"
dim = 3
[[columns]]
name = "w"
ty = "f64"
[[columns]]
name = "tags"
ty = "json"
`;

function refusal(toml: string): string {
  try {
    parseManifest(toml);
    return 'accepted';
  } catch (e) {
    expect(e).toBeInstanceOf(DbError);
    expect((e as DbError).code).toBe('validation_failed');
    return (e as DbError).message;
  }
}

describe('manifest grammar', () => {
  it('parses every key of a full manifest', () => {
    const m = parseManifest(
      BASE +
        `description = "x"
[[indexes]]
name = "by_n"
columns = ["n", "w"]
unique = true
[[foreign_keys]]
name = "self_ref"
columns = ["body"]
references = "shop.items"
on_delete = "ignore"
[[checks]]
name = "n_pos"
expr = "n > 0"
[vector]
column = "emb"
dim = 3
metric = "l2"
index = "hnsw"
params = { m = 8 }
[[fulltext]]
field = "body"
analyzer = "keyword"
stopwords = ["x"]
k1 = 1.5
b = 0.5
[[relations]]
name = "tagged"
target = "shop.tags"
columns = ["tags"]
weight = "w"
[[relations]]
name = "edge"
source = "shop.users"
source_columns = ["id"]
target = "shop.items"
columns = ["body"]
`.replace('description = "x"\n', ''),
    );
    expect(m.id).toBe('shop.items');
    expect(m.columns.find((c) => c.name === 'emb')).toEqual({ name: 'emb', ty: 'vector', required: false, dim: 3 });
    expect(m.indexes).toEqual([{ name: 'by_n', columns: ['n', 'w'], unique: true }]);
    expect(m.foreign_keys).toEqual([{ name: 'self_ref', columns: ['body'], references: 'shop.items', ref_columns: [], on_delete: 'ignore' }]);
    expect(m.checks).toEqual([{ name: 'n_pos', expr: 'n > 0' }]);
    expect(m.vector).toEqual({ column: 'emb', dim: 3, metric: 'l2', index: 'hnsw', params: { m: 8 } });
    expect(m.fulltext).toEqual([{ field: 'body', analyzer: 'keyword', stopwords: ['x'], k1: 1.5, b: 0.5 }]);
    expect(m.relations[0]).toEqual({ name: 'tagged', source: 'shop.items', target: 'shop.tags', columns: ['tags'], weight: 'w' });
    expect(m.relations[1]).toEqual({ name: 'edge', source: 'shop.users', source_columns: ['id'], target: 'shop.items', columns: ['body'] });
  });

  it('applies defaults: metric cosine, index auto, analyzer english, k1 1.2, b 0.75, restrict', () => {
    const m = parseManifest(BASE + '[vector]\ncolumn = "emb"\n[[fulltext]]\nfield = "body"\n');
    expect(m.vector).toMatchObject({ metric: 'cosine', index: 'auto', dim: 3 });
    expect(m.fulltext[0]).toMatchObject({ analyzer: 'english', k1: 1.2, b: 0.75 });
  });

  it('keeps the English keys: label, column description and synonyms, relation forward and reverse', () => {
    const toml = BASE.replace('primary_key = ["id"]', 'primary_key = ["id"]\nlabel = "body"').replace('name = "w"\nty = "f64"', 'name = "w"\nty = "f64"\ndescription = "weight in grams"\nsynonyms = ["mass", "heft"]');
    const m = parseManifest(toml + '[[relations]]\nname = "r"\ntarget = "shop.items"\ncolumns = ["id"]\nforward = "item -> items it cites"\nreverse = "item -> items citing it"\n');
    expect(m.label).toBe('body');
    expect(m.columns.find((c) => c.name === 'w')).toMatchObject({ description: 'weight in grams', synonyms: ['mass', 'heft'] });
    expect(m.relations[0]).toMatchObject({ forward: 'item -> items it cites', reverse: 'item -> items citing it' });
    expect(refusal('label = "nope"\n' + BASE)).toMatch(/label: no column named "nope"/);
    expect(refusal(BASE.replace('primary_key = ["id"]', 'primary_key = ["id"]\nlabel = "n"'))).toMatch(/label: column "n" must have ty = "str"/);
  });

  it('converts defaults to their stored form', () => {
    const m = parseManifest(BASE.replace('name = "n"\nty = "i64"', 'name = "n"\nty = "i64"\ndefault = 5') + '[[columns]]\nname = "at"\nty = "timestamp"\ndefault = 1970-01-01T00:00:01Z\n');
    expect(m.columns.find((c) => c.name === 'n')?.default).toBe(5);
    expect(m.columns.find((c) => c.name === 'at')?.default).toBe(1000);
  });

  it('names the line of a TOML syntax error', () => {
    expect(refusal('namespace = "a"\ntable = \n')).toMatch(/line 2/);
  });

  it.each([
    ['missing namespace', BASE.replace('namespace = "shop"\n', ''), /^manifest: namespace: is required/],
    ['bad table name', BASE.replace('table = "items"', 'table = "1x"'), /^manifest: table: "1x" is not a valid name/],
    ['unknown top-level key', 'colour = 1\n' + BASE, /^manifest: colour: unknown key/],
    ['no columns', 'namespace = "a"\ntable = "b"\nprimary_key = ["id"]\n', /^manifest: columns: at least one/],
    ['unknown column type', BASE.replace('ty = "i64"', 'ty = "int"'), /^manifest: columns\[1\]\.ty: unknown type "int"/],
    ['duplicate column', BASE + '[[columns]]\nname = "n"\nty = "str"\n', /^manifest: columns\[6\]\.name: duplicate column "n"/],
    ['unknown column key', BASE + '[[columns]]\nname = "q"\nty = "str"\nnullable = true\n', /^manifest: columns\[6\]\.nullable: unknown key/],
    ['vector without dim', BASE + '[[columns]]\nname = "v2"\nty = "vector"\n', /^manifest: columns\[6\]\.dim/],
    ['dim on a non-vector', BASE + '[[columns]]\nname = "q"\nty = "str"\ndim = 2\n', /^manifest: columns\[6\]\.dim: only a vector column/],
    ['required not a bool', BASE.replace('required = true', 'required = "yes"'), /^manifest: columns\[0\]\.required: must be true or false/],
    ['default of the wrong type', BASE.replace('ty = "i64"', 'ty = "i64"\ndefault = "x"'), /^manifest: columns\[1\]\.default: column "n" expects i64/],
    ['primary key missing', BASE.replace('primary_key = ["id"]\n', ''), /^manifest: primary_key: is required/],
    ['primary key on unknown column', BASE.replace('primary_key = ["id"]', 'primary_key = ["nope"]'), /^manifest: primary_key\[0\]: no column named "nope"/],
    ['primary key on a json column', BASE.replace('primary_key = ["id"]', 'primary_key = ["tags"]'), /^manifest: primary_key\[0\]: column "tags" of type json/],
    ['primary key repeats a column', BASE.replace('primary_key = ["id"]', 'primary_key = ["id", "id"]'), /^manifest: primary_key: names a column twice/],
    ['index on unknown column', BASE + '[[indexes]]\nname = "i"\ncolumns = ["zz"]\n', /^manifest: indexes\[0\]\.columns\[0\]: no column named "zz"/],
    ['index without columns', BASE + '[[indexes]]\nname = "i"\n', /^manifest: indexes\[0\]\.columns: is required/],
    ['index on a vector', BASE + '[[indexes]]\nname = "i"\ncolumns = ["emb"]\n', /^manifest: indexes\[0\]\.columns\[0\]: a vector column/],
    ['duplicate constraint names', BASE + '[[indexes]]\nname = "i"\ncolumns = ["n"]\n[[checks]]\nname = "i"\nexpr = "n > 0"\n', /^manifest: checks\[0\]\.name: duplicate name "i"/],
    ['fk references a non-id', BASE + '[[foreign_keys]]\ncolumns = ["n"]\nreferences = "users"\n', /^manifest: foreign_keys\[0\]\.references: "users" is not a schema id/],
    ['fk with bad on_delete', BASE + '[[foreign_keys]]\ncolumns = ["n"]\nreferences = "a.b"\non_delete = "cascade"\n', /^manifest: foreign_keys\[0\]\.on_delete/],
    ['fk ref_columns of another length', BASE + '[[foreign_keys]]\ncolumns = ["n"]\nreferences = "a.b"\nref_columns = ["x", "y"]\n', /^manifest: foreign_keys\[0\]\.ref_columns/],
    ['check without expr', BASE + '[[checks]]\nname = "c"\n', /^manifest: checks\[0\]\.expr: is required/],
    ['vector on a non-vector column', BASE + '[vector]\ncolumn = "body"\n', /^manifest: vector\.column: column "body" must have ty = "vector"/],
    ['vector dim disagreeing', BASE + '[vector]\ncolumn = "emb"\ndim = 4\n', /^manifest: vector\.dim: disagrees/],
    ['unknown metric', BASE + '[vector]\ncolumn = "emb"\nmetric = "hamming"\n', /^manifest: vector\.metric: unknown metric "hamming"/],
    ['unknown index kind', BASE + '[vector]\ncolumn = "emb"\nindex = "lsh"\n', /^manifest: vector\.index: unknown index kind "lsh"/],
    ['non-numeric vector param', BASE + '[vector]\ncolumn = "emb"\nparams = { m = "x" }\n', /^manifest: vector\.params\.m: must be a number/],
    ['fulltext on a non-str column', BASE + '[[fulltext]]\nfield = "n"\n', /^manifest: fulltext\[0\]\.field: column "n" must have ty = "str"/],
    ['fulltext field twice', BASE + '[[fulltext]]\nfield = "body"\n[[fulltext]]\nfield = "body"\n', /^manifest: fulltext\[1\]\.field: field "body" declared twice/],
    ['fulltext b out of range', BASE + '[[fulltext]]\nfield = "body"\nb = 2\n', /^manifest: fulltext\[0\]\.b: must be a number in \[0, 1\]/],
    ['fulltext stopwords not strings', BASE + '[[fulltext]]\nfield = "body"\nstopwords = [1]\n', /^manifest: fulltext\[0\]\.stopwords/],
    ['relation without target', BASE + '[[relations]]\nname = "r"\ncolumns = ["n"]\n', /^manifest: relations\[0\]\.target: is required/],
    ['relation on unknown column', BASE + '[[relations]]\nname = "r"\ntarget = "a.b"\ncolumns = ["q"]\n', /^manifest: relations\[0\]\.columns\[0\]: no column named "q"/],
    ['relation source without source_columns', BASE + '[[relations]]\nname = "r"\ntarget = "a.b"\ncolumns = ["n"]\nsource = "a.c"\n', /^manifest: relations\[0\]\.source_columns: source and source_columns go together/],
    ['relation weight not numeric', BASE + '[[relations]]\nname = "r"\ntarget = "a.b"\ncolumns = ["n"]\nweight = "body"\n', /^manifest: relations\[0\]\.weight: column "body" must be f64 or i64/],
    ['columns not an array of tables', 'namespace = "a"\ntable = "b"\nprimary_key = ["id"]\ncolumns = 3\n', /^manifest: columns: must be an array of tables/],
  ])('refuses %s, naming the key', (_what, toml, message) => {
    expect(refusal(toml)).toMatch(message);
  });
});
