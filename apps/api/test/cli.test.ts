/**
 * The `mmdb` command line (apps/cli, built to apps/cli/dist/main.js) end to end against the
 * real built server over HTTPS. The SQL shell and the import progress bar run in a real
 * pseudo-terminal: util-linux `script -q -e -c <cmd> /dev/null` gives the command a pty (so
 * readline and cli-progress see a terminal), and the test writes keystrokes to it.
 */
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Mmdb } from '@mmdb/client';
import { manifest } from './manifests';
import { bootstrapEnv, OPERATOR, ROOT, TENANT, TestServer, TOKEN } from './server';

const CLI = path.join(ROOT, 'apps/cli/dist/main.js');
const TOML = manifest('app.people', ['id'], { id: 'i64', name: 'str', score: 'f64', active: 'bool' });

interface Run {
  code: number | null;
  out: string;
  err: string;
}

describe('mmdb CLI end to end', () => {
  let srv: TestServer;
  let dir: string;
  let env: Record<string, string>;
  let db: Mmdb;

  /** Runs the CLI; with `pty`, inside `script` (stdout and stderr both come back on `out`). */
  function run(args: string[], o: { input?: string; pty?: boolean; env?: Record<string, string> } = {}): Promise<Run> {
    const e = { ...env, ...o.env };
    const child = o.pty
      ? spawn('script', ['-q', '-e', '-c', [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' '), '/dev/null'], { env: { ...e, SHELL: '/bin/sh', TERM: 'xterm', COLUMNS: '120' } })
      : spawn(process.execPath, [CLI, ...args], { env: e });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    if (o.input !== undefined) child.stdin.write(o.input);
    if (!o.pty) child.stdin.end();
    return new Promise((resolve) =>
      child.on('close', (code) => {
        resolve({ code, out: out.replace(/\r/g, ''), err });
      }),
    ).then((r) => (o.pty && child.stdin.end(), r as Run));
  }

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-cli-'));
    env = {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      MMDB_URL: srv.url,
      MMDB_TOKEN: TOKEN,
      MMDB_TENANT: TENANT,
      MMDB_CA_FILE: path.join(srv.dataDir, 'tls/cert.pem'),
      MMDB_HISTORY: path.join(dir, 'history'),
      MMDB_CONFIG: path.join(dir, 'config.toml'),
    };
    db = new Mmdb({ url: srv.url, token: TOKEN, tenant: TENANT, caFile: env.MMDB_CA_FILE });
    fs.writeFileSync(path.join(dir, 'people.toml'), TOML);
  }, 60_000);
  afterAll(async () => {
    await db?.close();
    await srv?.stop();
  });

  it('--help works on every command', async () => {
    const top = await run(['--help']);
    expect(top.code).toBe(0);
    const cmds = ['sql', 'ask', 'import', 'export', 'watch', 'schema', 'schema push', 'schema pull', 'schema list', 'migrate', 'migrate submit', 'migrate cutover', 'migrate abort', 'tenant', 'tenant create', 'token', 'token rotate', 'profile'];
    for (const c of cmds) expect(top.out + c).toContain(c.split(' ')[0]);
    const helps = await Promise.all(cmds.map((c) => run([...c.split(' '), '--help'])));
    helps.forEach((h, i) => {
      expect([cmds[i], h.code]).toEqual([cmds[i], 0]);
      expect(h.out).toContain(`Usage: mmdb ${cmds[i]}`);
    });
  });

  it('schema push, list, pull', async () => {
    const push = await run(['schema', 'push', path.join(dir, 'people.toml')]);
    expect(push).toMatchObject({ code: 0, out: 'created app.people\n' });
    expect((await run(['schema', 'list'])).out).toBe('app.people\n');
    expect((await run(['schema', 'pull', 'app.people'])).out).toBe(TOML);
    const bad = await run(['schema', 'pull', 'no.such']);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/^error: schema_not_found: .*\(request [0-9A-Z]{26}\)/);
  });

  it('import NDJSON in a pty: a progress bar with rows/s and ETA, every row stored', async () => {
    const file = path.join(dir, 'people.ndjson');
    fs.writeFileSync(file, Array.from({ length: 3000 }, (_, i) => JSON.stringify({ id: i, name: `p${i}`, score: i / 2 })).join('\n') + '\n');
    const r = await run(['import', 'app.people', file, '--batch', '250'], { pty: true });
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/import \|[=-]+\| \d+% \| \d+\/3000 rows \| \d+ rows\/s \| ETA \d+s/);
    expect(r.out).toContain('100% | 3000/3000 rows');
    expect(r.out).toContain('imported 3000 rows into app.people (12 batches sent)');
    expect(fs.existsSync(`${file}.mmdb-import.json`)).toBe(false);
    expect((await db.sql('SELECT count(*) AS n, sum(score) AS s FROM app.people')).rows).toEqual([{ n: 3000, s: 2249250 }]);
  });

  it('import resumes after a stop, and a batch sent twice is not written twice', async () => {
    const file = path.join(dir, 'more.jsonl');
    fs.writeFileSync(file, Array.from({ length: 1000 }, (_, i) => JSON.stringify({ id: 10_000 + i, name: `m${i}` })).join('\n'));
    const first = await run(['import', 'app.people', file, '--batch', '100', '--max-batches', '3', '--no-progress']);
    expect(first.out).toContain('imported 300 rows');
    const stateFile = `${file}.mmdb-import.json`;
    const st = JSON.parse(fs.readFileSync(stateFile, 'utf8'));
    expect(st).toMatchObject({ done: 3, rows: 300 });
    // As if the run had died after sending batch 2 but before recording it:
    fs.writeFileSync(stateFile, JSON.stringify({ ...st, done: 2, rows: 200 }));
    const second = await run(['import', 'app.people', file, '--batch', '100', '--no-progress']);
    expect(second.code).toBe(0);
    expect(second.err).toContain('resuming: 2 batches (200 rows) already imported');
    expect(second.out).toContain('imported 1000 rows into app.people (8 batches sent, 200 rows from an earlier run)');
    // batch 2 (rows 200..299) was replayed by its Idempotency-Key: still at version 1
    expect((await db.rows.getVersioned('app.people', 10_250))?.version).toBe(1);
    expect((await db.sql('SELECT count(*) AS n FROM app.people WHERE id >= 10000')).rows).toEqual([{ n: 1000 }]);
  });

  it('import CSV (quotes, commas, line breaks in fields), typed by the schema', async () => {
    const file = path.join(dir, 'people.csv');
    fs.writeFileSync(file, 'id,name,score,active\r\n20000,"Smith, Ann",1.5,true\r\n20001,"say ""hi""\nthere",,false\r\n20002,plain,3,\r\n');
    const r = await run(['import', 'app.people', file, '--no-progress']);
    expect(r.out).toContain('imported 3 rows');
    expect(await db.rows.get('app.people', 20000)).toEqual({ id: 20000, name: 'Smith, Ann', score: 1.5, active: true });
    expect(await db.rows.get('app.people', 20001)).toEqual({ id: 20001, name: 'say "hi"\nthere', active: false });
    expect(await db.rows.get('app.people', 20002)).toEqual({ id: 20002, name: 'plain', score: 3 });
  });

  it('import from standard input (-), JSON Lines by default, CSV with --format', async () => {
    const r = await run(['import', 'app.people', '-', '--batch', '2', '--no-progress'], { input: '{"id":30000,"name":"in1"}\n{"id":30001}\n{"id":30002}\n' });
    expect(r.out).toBe('imported 3 rows into app.people (2 batches sent)\n');
    const c = await run(['import', 'app.people', '-', '--format', 'csv', '--no-progress'], { input: 'id,score\n30003,2.5\n' });
    expect(c.out).toContain('imported 1 rows');
    expect(await db.rows.get('app.people', 30003)).toEqual({ id: 30003, score: 2.5 });
  });

  it('the SQL shell in a pty: multi-line statements, aligned tables, \\d, errors, history', async () => {
    const input = ['SELECT id, name', '  FROM app.people WHERE id < 3 ORDER BY id;', '\\d app.people', '\\d', 'SELEC 1;', 'SELECT name FROM app.people WHERE id = $1;', '\\q', ''].join('\n');
    const r = await run(['sql'], { pty: true, input });
    expect(r.code).toBe(0);
    expect(r.out).toContain('mmdb sql shell');
    expect(r.out).toContain(' id | name\n----+------\n  0 | p0\n  1 | p1\n  2 | p2\n(3 rows)');
    expect(r.out).toContain(' column | type | required | key\n--------+------+----------+-----\n id     | i64  | yes      | PK');
    expect(r.out).toContain(' schema\n------------\n app.people\n(1 row)');
    expect(r.out).toMatch(/error: validation_failed: .*SELEC/);
    // a new session: ↑ recalls this session's statement; ↑↑↑ goes back past it and the previous
    // session's \q (history file) to its `SELECT name … = $1;`, run again here with no parameter
    const again = await run(['sql'], { pty: true, input: 'SELECT 40 + 2 AS x;\n\x1b[A\n\x1b[A\x1b[A\x1b[A\n\\q\n' });
    expect(again.out.split(' x\n----\n 42\n(1 row)').length - 1).toBe(2);
    expect(again.out).toContain('mmdb> SELECT name FROM app.people WHERE id = $1;'); // recalled
    expect(again.out).toMatch(/error: validation_failed: .*\$1/);
    const history = fs.readFileSync(env.MMDB_HISTORY, 'utf8');
    expect(history).toContain('SELECT id, name   FROM app.people WHERE id < 3 ORDER BY id;');
    expect(history).toContain('\\d app.people');
  });

  it('sql -c with params, formats; statements from stdin', async () => {
    const r = await run(['sql', '-c', 'SELECT id, name FROM app.people WHERE id = $1', '-p', '5', '-f', 'json']);
    expect(JSON.parse(r.out)).toEqual([{ id: 5, name: 'p5' }]);
    const s = await run(['sql', '-f', 'csv'], { input: "SELECT name FROM app.people WHERE id = 20000; SELECT 'a;b' AS x;" });
    expect(s.out).toBe('name\n"Smith, Ann"\nx\na;b\n');
  });

  it('export NDJSON and CSV, every row in key order', async () => {
    const r = await run(['export', 'app.people', '--page', '700']);
    const lines = r.out.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines).toHaveLength(4007);
    expect(lines[0]).toEqual({ id: 0, name: 'p0', score: 0, active: null });
    const out = path.join(dir, 'out.csv');
    const c = await run(['export', 'app.people', '-f', 'csv', '-o', out]);
    expect(c.err).toContain('exported 4007 rows');
    expect(fs.readFileSync(out, 'utf8').split('\n')[0]).toBe('id,name,score,active');
    // a composite key pages by offset
    await db.schemas.put(manifest('app.pairs', ['a', 'b'], { a: 'str', b: 'i64' }));
    await db.rows.batch('app.pairs', Array.from({ length: 25 }, (_, i) => ({ a: `k${i % 3}`, b: i })));
    const pairs = (await run(['export', 'app.pairs', '--page', '4'])).out.trim().split('\n').map((l) => JSON.parse(l));
    expect(pairs).toHaveLength(25);
    expect(pairs.slice(0, 2)).toEqual([{ a: 'k0', b: 0 }, { a: 'k0', b: 3 }]);
  });

  it('profiles: flags, then env, then the profile file', async () => {
    const bare = { MMDB_URL: '', MMDB_TOKEN: '', MMDB_TENANT: '', MMDB_CA_FILE: '' };
    const noEnv = Object.fromEntries(Object.entries(env).filter(([k]) => !(k in bare)));
    const set = await run(['--url', srv.url, '--token', TOKEN, '--tenant', TENANT, '--ca', env.MMDB_CA_FILE, 'profile', 'set', 'local'], { env: {} });
    expect(set.code).toBe(0);
    const child = (args: string[], extra: Record<string, string>) =>
      new Promise<Run>((resolve) => {
        const p = spawn(process.execPath, [CLI, ...args], { env: { ...noEnv, ...extra } });
        let out = '';
        let err = '';
        p.stdout.on('data', (d) => (out += d));
        p.stderr.on('data', (d) => (err += d));
        p.on('close', (code) => resolve({ code, out, err }));
      });
    expect((await child(['--profile', 'local', 'schema', 'list'], {})).out).toBe('app.pairs\napp.people\n');
    expect((await child(['schema', 'list'], { MMDB_PROFILE: 'local' })).out).toBe('app.pairs\napp.people\n');
    // a flag beats the profile
    const wrong = await child(['--profile', 'local', '--token', 'nope-nope-nope-nope', 'schema', 'list'], {});
    expect(wrong.err).toMatch(/^error: unauthorized/);
    expect((await child(['--profile', 'missing', 'schema', 'list'], {})).err).toMatch(/no profile "missing"/);
  });

  it('operator commands: tenants and tokens', async () => {
    const made = await run(['--token', OPERATOR, 'tenant', 'create']);
    const t = JSON.parse(made.out);
    expect(t.token).toMatch(/^mmdb_/);
    expect((await run(['--token', OPERATOR, 'tenant', 'list'])).out).toContain(t.tenant);
    const issued = JSON.parse((await run(['token', 'issue', '--ttl', '600'])).out);
    expect((await run(['token', 'list'])).out).toContain(issued.token_id);
    const rotated = JSON.parse((await run(['token', 'rotate', issued.token_id, '--grace', '0'])).out);
    expect(JSON.parse((await run(['token', 'revoke', rotated.token_id])).out)).toEqual({ revoked: true });
  });
});
