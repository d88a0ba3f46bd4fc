/**
 * The layers of libs/sql, checked from the sources: exec/ (operators) at the bottom; front/
 * (parse, bind) and optimizer/ above it and independent of each other; run/ (the plan
 * executor: sources, policy, writer) above optimizer/ and exec/; the driver (engine.ts,
 * statements.ts) on top. No import cycle between the folders.
 */
import { readdirSync, readFileSync } from 'fs';
import { join, dirname, resolve, relative } from 'path';

const SRC = resolve(__dirname, '../src');
const FOLDERS = ['front', 'optimizer', 'exec', 'run'] as const;
/** Shared modules at the root any layer may use (they import at most exec/ types). */
const SHARED = new Set(['values', 'catalog', 'affinity', 'plan-cache', 'column-codec']);

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? files(join(dir, d.name)) : d.name.endsWith('.ts') && !d.name.endsWith('.spec.ts') ? [join(dir, d.name)] : []));
}

function layerOf(file: string): string {
  const rel = relative(SRC, file).replace(/\.ts$/, '');
  const top = rel.split('/')[0];
  return rel.includes('/') ? top : SHARED.has(rel) ? `shared:${rel}` : `root:${rel}`;
}

const edges = new Map<string, Set<string>>();
for (const f of files(SRC)) {
  const from = layerOf(f);
  for (const m of readFileSync(f, 'utf8').matchAll(/from '(\.[^']+)'/g)) {
    const to = layerOf(resolve(dirname(f), m[1]) + '.ts');
    if (to === from) continue;
    if (!edges.has(from)) edges.set(from, new Set());
    edges.get(from)!.add(to);
  }
}
const uses = (a: string) => [...(edges.get(a) ?? [])];

describe('libs/sql layers', () => {
  it('exec/ imports no other folder and no driver file', () => {
    expect(uses('exec').filter((x) => !x.startsWith('shared:'))).toEqual([]);
  });
  it('front/ and optimizer/ use only exec/ and shared modules', () => {
    expect(uses('front').filter((x) => x !== 'exec' && !x.startsWith('shared:'))).toEqual([]);
    expect(uses('optimizer').filter((x) => x !== 'exec' && !x.startsWith('shared:'))).toEqual([]);
  });
  it('run/ (the executor) does not depend on the SQL front end or the driver', () => {
    expect(uses('run').filter((x) => x === 'front' || x.startsWith('root:'))).toEqual([]);
  });
  it('shared modules import no folder above exec/', () => {
    for (const s of [...edges.keys()].filter((k) => k.startsWith('shared:'))) {
      expect([s, uses(s).filter((x) => x !== 'exec' && (FOLDERS as readonly string[]).includes(x))]).toEqual([s, []]);
    }
  });
});
