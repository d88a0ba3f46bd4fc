/**
 * Packages: every lib and the CLI pack (`npm pack`) with their built code, types and docs;
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
    expect(files.filter((f) => /(^src\/|\.spec\.|^test\/)/.test(f))).toEqual([]);
    // every internal dependency is itself one of the packed packages
    for (const dep of Object.keys(pkg.dependencies ?? {}).filter((d) => d.startsWith('@mmdb/'))) {
      expect(PACKAGES.map((p) => JSON.parse(fs.readFileSync(path.join(ROOT, p, 'package.json'), 'utf8')).name)).toContain(dep);
    }
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
      const deps = new Set<string>();
      const walk = (name: string) => {
        if (deps.has(name)) return;
        deps.add(name);
        const pj = JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8'));
        Object.keys(pj.dependencies ?? {}).forEach(walk);
      };
      const cliPkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'apps/cli/package.json'), 'utf8'));
      Object.keys(cliPkg.dependencies).filter((d) => !d.startsWith('@mmdb/')).forEach(walk);
      const tars = [...deps].map((d) => {
        const file = path.join(proj, `dep-${d.replace('/', '-')}.tgz`);
        execFileSync('tar', ['czf', file, '-C', path.dirname(path.join(ROOT, 'node_modules', d)), `--transform=s,^${path.basename(d)},package,`, path.basename(d)]);
        return file;
      });
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
});
