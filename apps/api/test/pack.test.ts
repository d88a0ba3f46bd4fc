/**
 * Packages: every lib and the CLI pack (`npm pack`) with their built code, types, docs and
 * changelog, and are released by `nx release` (the dry run is in .ci/run); every lib's tarball
 * installs in a fresh project outside the repository and loads there (a store opens from it);
 * the client's tarball installs in a fresh project outside the repository (offline: it has no
 * dependencies), type-checks there, and a small script using it runs against the real server.
 * The CLI's tarball installs there too, beside the client's and its third-party dependencies
 * (tarred from the repository's node_modules, so the install needs no registry), and its `mmdb`
 * binary talks to the server.
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { bootstrapEnv, ROOT, TENANT, TestServer, TOKEN } from './server';

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const npm = (cwd: string, args: string[]) => execFileSync(NPM, args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_loglevel: 'error', npm_config_update_notifier: 'false' } });
const PACKAGES = [...fs.readdirSync(path.join(ROOT, 'libs')).map((d) => `libs/${d}`), 'apps/cli'];

/**
 * Tarballs of third-party packages (and, transitively, their dependencies) made from the
 * repository's installed copies, so an install needs no registry. Hard links are stored as
 * files: npm does not extract hard-link entries (hnswlib-node's addon.node is one).
 */
function thirdPartyTarballs(proj: string, names: string[]): string[] {
  const deps = new Set<string>();
  const walk = (name: string) => {
    if (deps.has(name)) return;
    deps.add(name);
    const pj = JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8'));
    Object.keys(pj.dependencies ?? {}).forEach(walk);
  };
  names.filter((d) => !d.startsWith('@mmdb/')).forEach(walk);
  return [...deps].map((d) => {
    const file = path.join(proj, `dep-${d.replace('/', '-')}.tgz`);
    execFileSync('tar', ['czf', file, '--hard-dereference', '-C', path.dirname(path.join(ROOT, 'node_modules', d)), `--transform=s,^${path.basename(d)},package,`, path.basename(d)]);
    return file;
  });
}

describe('npm packages', () => {
  it.each(PACKAGES)('%s packs its dist (code and types) and docs, without sources or tests', (dir) => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, dir, 'package.json'), 'utf8'));
    const [info] = JSON.parse(npm(path.join(ROOT, dir), ['pack', '--dry-run', '--json']));
    const files: string[] = info.files.map((f: { path: string }) => f.path);
    expect(info.name).toBe(pkg.name);
    const main = (pkg.main as string).replace(/^\.\//, '');
    expect(files).toContain(main);
    if (pkg.types) expect(files).toContain(pkg.types.replace(/^\.\//, ''));
    expect(files).toContain('README.md');
    expect(files).toContain('CHANGELOG.md');
    expect(files.filter((f) => /\.(tsbuildinfo|map)$/.test(f))).toEqual([]);
    expect(files.filter((f) => /(^src\/|\.spec\.|^test\/)/.test(f))).toEqual([]);
    // every internal dependency is itself one of the packed packages
    for (const dep of Object.keys(pkg.dependencies ?? {}).filter((d) => d.startsWith('@mmdb/'))) {
      expect(PACKAGES.map((p) => JSON.parse(fs.readFileSync(path.join(ROOT, p, 'package.json'), 'utf8')).name)).toContain(dep);
    }
  });

  it('nx release covers every package, each with its CHANGELOG.md, versions independent', () => {
    const release = JSON.parse(fs.readFileSync(path.join(ROOT, 'nx.json'), 'utf8')).release;
    expect(release.projectsRelationship).toBe('independent');
    const names = PACKAGES.map((d) => JSON.parse(fs.readFileSync(path.join(ROOT, d, 'project.json'), 'utf8')).name);
    expect([...release.projects].sort()).toEqual([...names].sort());
    for (const d of PACKAGES) expect(fs.readFileSync(path.join(ROOT, d, 'CHANGELOG.md'), 'utf8')).toMatch(/^# Changelog: @mmdb\/[a-z-]+\n[\s\S]*## \d+\.\d+\.\d+/);
  });

  describe('the client, installed in a fresh project outside the repo', () => {
    let srv: TestServer;
    let proj: string;

    beforeAll(async () => {
      srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
      proj = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-pack-'));
      const [packed] = JSON.parse(npm(path.join(ROOT, 'libs/client'), ['pack', '--json', '--pack-destination', proj]));
      fs.writeFileSync(path.join(proj, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
      npm(proj, ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', path.join(proj, packed.filename)]);
      // the CLI: its own tarball, and its third-party dependencies (transitively) as tarballs of the installed copies
      const [cli] = JSON.parse(npm(path.join(ROOT, 'apps/cli'), ['pack', '--json', '--pack-destination', proj]));
      const tars = thirdPartyTarballs(proj, Object.keys(JSON.parse(fs.readFileSync(path.join(ROOT, 'apps/cli/package.json'), 'utf8')).dependencies));
      npm(proj, ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', path.join(proj, packed.filename), path.join(proj, cli.filename), ...tars]);
    }, 120_000);
    afterAll(async () => {
      await srv?.stop();
      if (proj) fs.rmSync(proj, { recursive: true, force: true });
    });

    it('installs with only its package files', () => {
      expect(fs.readdirSync(path.join(proj, 'node_modules/@mmdb')).sort()).toEqual(['cli', 'client']);
      expect(fs.existsSync(path.join(proj, 'node_modules/@mmdb/client/dist/index.d.ts'))).toBe(true);
      expect(fs.existsSync(path.join(proj, 'node_modules/@mmdb/client/src'))).toBe(false);
      expect(JSON.parse(fs.readFileSync(path.join(proj, 'node_modules/@mmdb/client/package.json'), 'utf8')).dependencies).toEqual({});
    });

    it('the installed mmdb binary talks to the server', () => {
      const env = { PATH: process.env.PATH ?? '', HOME: proj, MMDB_URL: srv.url, MMDB_TOKEN: TOKEN, MMDB_TENANT: TENANT, MMDB_CA_FILE: path.join(srv.dataDir, 'tls/cert.pem') };
      const bin = path.join(proj, 'node_modules/.bin/mmdb');
      expect(execFileSync(bin, ['--version'], { cwd: proj, encoding: 'utf8', env })).toBe('0.1.0\n');
      expect(execFileSync(bin, ['sql', '-c', 'SELECT 6 * 7 AS answer'], { cwd: proj, encoding: 'utf8', env })).toBe(' answer\n--------\n     42\n(1 row)\n');
    });

    it('type-checks a TypeScript consumer against the published types', () => {
      fs.writeFileSync(
        path.join(proj, 'check.ts'),
        `import { Mmdb, MmdbError, plan, expr } from '@mmdb/client';
const db = new Mmdb({ url: 'https://x', token: 't', tenant: 'T', insecure: true });
async function f(): Promise<number> {
  const r = await db.sql<{ n: number }>('SELECT 1 AS n', []);
  const rows: { id: number }[] = await db.query<{ id: number }>(plan.scan('a.b').filter(expr.eq('id', 1)));
  const w = await db.rows.put('a.b', 1, { id: 1 }, { ifMatch: 2 });
  try { await db.rows.get('a.b', 1); } catch (e) { if (e instanceof MmdbError) return e.status; }
  return r.rows[0].n + rows.length + w.version;
}
void f;
`,
      );
      const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
      execFileSync(process.execPath, [tsc, '--noEmit', '--strict', '--module', 'commonjs', '--target', 'es2022', '--moduleResolution', 'node10', '--types', 'node', '--typeRoots', path.join(ROOT, 'node_modules/@types'), 'check.ts'], { cwd: proj, encoding: 'utf8' });
    });

    it('a small script using the installed package runs against the real server', () => {
      fs.writeFileSync(
        path.join(proj, 'run.js'),
        `const { Mmdb } = require('@mmdb/client');
(async () => {
  const db = new Mmdb({ url: process.env.URL, token: process.env.TOKEN, tenant: process.env.TENANT, caFile: process.env.CA });
  await db.schemas.put('namespace = "pkg"\\ntable = "t"\\nprimary_key = ["id"]\\n[[columns]]\\nname = "id"\\nty = "i64"\\nrequired = true\\n[[columns]]\\nname = "v"\\nty = "str"\\n');
  await db.rows.batch('pkg.t', [{ id: 1, v: 'a' }, { id: 2, v: 'b' }]);
  const r = await db.sql('SELECT v FROM pkg.t WHERE id = $1', [2]);
  let code;
  try { await db.rows.get('pkg.t', 3); } catch (e) { code = e.code; }
  console.log(JSON.stringify({ rows: r.rows, code, doc: (await db.openapi()).info.version }));
  await db.close();
})().catch((e) => { console.error(e); process.exit(1); });
`,
      );
      const out = execFileSync(process.execPath, ['run.js'], {
        cwd: proj,
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '', URL: srv.url, TOKEN, TENANT, CA: path.join(srv.dataDir, 'tls/cert.pem') },
      });
      expect(JSON.parse(out)).toEqual({ rows: [{ v: 'b' }], code: 'row_not_found', doc: '1.0.0' });
    });
  });

  it('every lib, packed and installed together in a fresh project outside the repo, loads there', () => {
    const proj = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-libs-'));
    try {
      const libs = PACKAGES.filter((d) => d.startsWith('libs/'));
      const packed = libs.map((d) => path.join(proj, JSON.parse(npm(path.join(ROOT, d), ['pack', '--json', '--pack-destination', proj]))[0].filename));
      const pkgs = libs.map((d) => JSON.parse(fs.readFileSync(path.join(ROOT, d, 'package.json'), 'utf8')));
      const tars = thirdPartyTarballs(proj, [...new Set(pkgs.flatMap((p) => Object.keys(p.dependencies ?? {})))]);
      fs.writeFileSync(path.join(proj, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
      npm(proj, ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', ...packed, ...tars]);
      // each package's public door loads from node_modules (not the repository) and exports something
      const script = `const out = {}; for (const n of ${JSON.stringify(pkgs.map((p) => p.name))}) { const m = require(n); if (!require.resolve(n).startsWith(__dirname)) throw new Error(n + ' resolved outside'); out[n] = Object.keys(m).length; } console.log(JSON.stringify(out));`;
      fs.writeFileSync(path.join(proj, 'load.js'), script);
      const loaded = JSON.parse(execFileSync(process.execPath, ['load.js'], { cwd: proj, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } }));
      expect(Object.keys(loaded).sort()).toEqual(pkgs.map((p) => p.name).sort());
      for (const n of Object.keys(loaded)) expect([n, loaded[n] > 0]).toEqual([n, true]);
      // a store opens from the installed packages (classic-level's native binding included): a frame committed, the row read back
      fs.writeFileSync(
        path.join(proj, 'store.js'),
        `const { TenantStore } = require('@mmdb/storage');
(async () => {
  const store = await TenantStore.open({ dir: require('path').join(__dirname, 'db') });
  await store.commit({ changes: [{ op: 'schema_put', toml: 'namespace = "a"\\ntable = "b"\\nprimary_key = ["id"]\\n[[columns]]\\nname = "id"\\nty = "i64"\\nrequired = true\\n[[columns]]\\nname = "v"\\nty = "str"\\n' }] });
  await store.commit({ changes: [{ op: 'put', schema: 'a.b', row: { id: 1, v: 'x' } }] });
  const r = await store.getRow('a.b', [1]);
  console.log(JSON.stringify({ version: r.version, values: r.values }));
  await store.close();
})().catch((e) => { console.error(e); process.exit(1); });
`,
      );
      expect(JSON.parse(execFileSync(process.execPath, ['store.js'], { cwd: proj, encoding: 'utf8' }))).toEqual({ version: 1, values: { id: 1, v: 'x' } });
    } finally {
      fs.rmSync(proj, { recursive: true, force: true });
    }
  }, 180_000);
});
