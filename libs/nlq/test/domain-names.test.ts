/**
 * CI guard (issue 19): libs/nlq must not know the nlbench library domain. The names are read at
 * test time from ../shared/nlbench (manifests, extras.json and the identifying values in the
 * data), never written here: tables (plural and singular), relations, compound column names,
 * display columns, and the label and category values. Single-word column names that are plain
 * English ("year", "price") are not listed: general English dimension words may name them.
 */
import { existsSync, readdirSync, readFileSync } from 'fs';
import { join } from 'path';
import pluralize from 'pluralize';

const ROOT = join(__dirname, '../../..');
const BENCH = join(ROOT, '../shared/nlbench/library');
const SRC = join(__dirname, '../src');

function domainNames(): string[] {
  const extras = JSON.parse(readFileSync(join(BENCH, 'extras.json'), 'utf8'));
  const names = new Set<string>();
  for (const f of readdirSync(join(BENCH, 'manifests'))) {
    const toml = readFileSync(join(BENCH, 'manifests', f), 'utf8');
    const table = /^table\s*=\s*"([^"]+)"/m.exec(toml)![1];
    names.add(table);
    names.add(pluralize.singular(table));
    for (const m of toml.matchAll(/^name\s*=\s*"([^"]+)"/gm)) if (m[1].includes('_')) names.add(m[1]);
  }
  for (const r of extras.relations) {
    names.add(r.name);
    for (const p of [r.forward, r.reverse]) for (const w of p.split(/[^a-z]+/)) if (w.length > 5) names.add(w);
  }
  // identifying values: label values and low-cardinality text values of the data
  for (const f of readdirSync(join(BENCH, 'data'))) {
    const rows = readFileSync(join(BENCH, 'data', f), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const table = `${extras.namespace}.${f.replace(/\.jsonl$/, '')}`;
    const label = extras.labels[table];
    const cols = Object.keys(rows[0] ?? {});
    for (const c of cols) {
      const vals = new Set(rows.map((r) => r[c]).filter((v) => typeof v === 'string' && !/^\d{4}-/.test(v)));
      if (c === label || vals.size <= 64) for (const v of vals) if (v.length >= 4 && !/[.!?]$/.test(v)) names.add(v as string);
    }
  }
  return [...names];
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

const run = existsSync(BENCH) ? it : it.skip;

describe('libs/nlq knows no benchmark domain', () => {
  run('contains none of the library domain names', () => {
    const names = domainNames();
    expect(names.length).toBeGreaterThan(100);
    const found: string[] = [];
    for (const file of sources(SRC)) {
      const text = readFileSync(file, 'utf8').toLowerCase();
      for (const n of names) {
        const re = new RegExp(`(^|[^a-z0-9_])${n.toLowerCase().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^a-z0-9_])`);
        if (re.test(text)) found.push(`${file.slice(ROOT.length + 1)}: ${n}`);
      }
    }
    expect(found).toEqual([]);
  });
});
