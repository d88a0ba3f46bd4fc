/**
 * The `mmdb` command line (apps/cli, built to apps/cli/dist/main.js) end to end against the
 * real built server over HTTPS. The SQL shell, the import and migration progress bars and the
 * Ctrl-C that interrupts an import run in a real pseudo-terminal: node-pty is not installed, so
 * util-linux `script -q -e -c <cmd> /dev/null` (present on Debian/Ubuntu, where CI runs) gives
 * the command a pty (readline and cli-progress see a terminal, and a \x03 written to it is the
 * terminal's SIGINT), and the test writes keystrokes to it.
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

  /** Starts the CLI; with `pty`, inside `script` (stdout and stderr both come back on `out`). */
  function start(args: string[], o: { pty?: boolean; env?: Record<string, string> } = {}) {
    const e = { ...env, ...o.env };
    const child = o.pty
      ? // `exec`: the shell script starts becomes the CLI, so a Ctrl-C reaches the CLI alone and its exit code is script's
        spawn('script', ['-q', '-e', '-c', 'exec ' + [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' '), '/dev/null'], { env: { ...e, SHELL: '/bin/sh', TERM: 'xterm', COLUMNS: '120' } })
      : spawn(process.execPath, [CLI, ...args], { env: e });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const done = new Promise<Run>((resolve) => child.on('close', (code) => resolve({ code, out: out.replace(/\r/g, ''), err }))).then((r) => (o.pty && child.stdin.end(), r));
    return { child, done, out: () => out.replace(/\r/g, '') };
  }

  function run(args: string[], o: { input?: string; pty?: boolean; env?: Record<string, string> } = {}): Promise<Run> {
    const p = start(args, o);
    if (o.input !== undefined) p.child.stdin.write(o.input);
    if (!o.pty) p.child.stdin.end();
    return p.done;
  }

  /** Batches an import's state file records as done (0 when there is none). */
  const done = (stateFile: string): number => {
    try {
      return (JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { done: number }).done;
    } catch {
      return 0; // absent (or, never with write-then-rename, half written)
    }
  };

  /** Waits (polling, at most `ms`) until `f` holds. */
  async function until(f: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
    const end = Date.now() + ms;
    while (!(await f())) {
      if (Date.now() > end) throw new Error(`condition not met in ${ms} ms: ${f}`);
      await new Promise((r) => setTimeout(r, 5));
    }
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

  it('--help works on every command, found by walking the help tree; each command has a description', async () => {
    /** The subcommands a help text lists, each with whether its line carries a description. */
    const listed = (help: string) =>
      (help.split('\nCommands:\n')[1] ?? '')
        .split('\n\n')[0]
        .split('\n')
        .filter((l) => /^ {2}\S/.test(l))
        .map((l) => ({ name: l.trim().split(/\s+/)[0], described: /^ {2}\S.*?\s{2,}\S/.test(l) }))
        .filter((c) => c.name !== 'help');
    const top = await run(['--help']);
    expect(top.code).toBe(0);
    const seen: string[] = [];
    let level = listed(top.out).map((c) => ({ path: [c.name], described: c.described }));
    while (level.length) {
      const helps = await Promise.all(level.map((c) => run([...c.path, '--help'])));
      const next: typeof level = [];
      level.forEach((c, i) => {
        const name = c.path.join(' ');
        expect([name, helps[i].code, c.described]).toEqual([name, 0, true]);
        expect(helps[i].out).toContain(`Usage: mmdb ${name}`);
        seen.push(name);
        next.push(...listed(helps[i].out).map((x) => ({ path: [...c.path, x.name], described: x.described })));
      });
      level = next;
    }
    const want = ['sql', 'ask', 'import', 'export', 'watch', 'schema push', 'schema pull', 'schema list', 'migrate submit', 'migrate status', 'migrate cutover', 'migrate abort', 'migrate list', 'migrate audit', 'tenant list', 'tenant create', 'token list', 'token issue', 'token revoke', 'token rotate', 'profile set', 'profile list'];
    expect(seen).toEqual(expect.arrayContaining(want));
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

  it('import stopped by Ctrl-C in a pty: the batch in flight is recorded, the run stops, and the next run resumes', async () => {
    await db.schemas.put(manifest('app.big', ['id'], { id: 'i64', name: 'str' }));
    const file = path.join(dir, 'big.ndjson');
    fs.writeFileSync(file, Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ id: 100_000 + i, name: `b${i}` })).join('\n') + '\n');
    const stateFile = `${file}.mmdb-import.json`;
    const p = start(['import', 'app.big', file, '--batch', '50'], { pty: true });
    await until(() => done(stateFile) >= 4);
    p.child.stdin.write('\x03'); // the terminal's interrupt character: SIGINT to the import
    const stopped = await p.done;
    expect(stopped.code).toBe(130);
    expect(stopped.out).toMatch(/import \|[=-]+\| \d+% \| \d+\/20000 rows \| \d+ rows\/s \| ETA \d+s/);
    const k = done(stateFile);
    expect(stopped.out).toContain(`error: interrupted after ${k} batches (${k * 50} rows): run the same command again to resume`);
    expect(k).toBeLessThan(400);
    expect((await db.sql('SELECT count(*) AS n FROM app.big')).rows).toEqual([{ n: k * 50 }]);
    const again = await run(['import', 'app.big', file, '--batch', '50', '--no-progress']);
    expect(again.code).toBe(0);
    expect(again.err).toContain(`resuming: ${k} batches (${k * 50} rows) already imported`);
    expect(again.out).toContain(`imported 20000 rows into app.big (${400 - k} batches sent, ${k * 50} rows from an earlier run)`);
    expect((await db.sql('SELECT count(*) AS n, min(id) AS lo, max(id) AS hi FROM app.big')).rows).toEqual([{ n: 20_000, lo: 100_000, hi: 119_999 }]);
  }, 120_000);

  it('import killed (SIGKILL) between a batch and its record resumes, and the batch resent with its key is not written twice', async () => {
    const file = path.join(dir, 'crash.ndjson');
    fs.writeFileSync(file, Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ id: 200_000 + i, name: `c${i}` })).join('\n') + '\n');
    const stateFile = `${file}.mmdb-import.json`;
    const p = start(['import', 'app.big', file, '--batch', '50', '--no-progress']);
    await until(() => done(stateFile) >= 4);
    p.child.kill('SIGKILL');
    await p.done;
    const k = done(stateFile);
    // the server holds every recorded batch, and perhaps the one in flight at the kill
    const n = (await db.sql<{ n: number }>('SELECT count(*) AS n FROM app.big WHERE id >= 200000')).rows[0].n;
    expect([k * 50, (k + 1) * 50]).toContain(n);
    const again = await run(['import', 'app.big', file, '--batch', '50', '--no-progress']);
    expect(again.code).toBe(0);
    expect(again.err).toContain(`resuming: ${k} batches (${k * 50} rows) already imported`);
    expect((await db.sql('SELECT count(*) AS n FROM app.big WHERE id >= 200000')).rows).toEqual([{ n: 20_000 }]);
    // the batch that was in flight (resent with its key) and its neighbours were written once
    for (const id of [200_000 + (k - 1) * 50, 200_000 + k * 50, 200_000 + k * 50 + 49, 200_000 + (k + 1) * 50]) {
      expect([id, (await db.rows.getVersioned('app.big', id))?.version]).toEqual([id, 1]);
    }
  }, 120_000);

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
    expect(r.out).toContain(' schema\n------------\n app.big\n app.people\n(2 rows)');
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

  it('migrate in a pty: submit with a progress bar (rows/s, ETA) and cutover; abort; status, list, audit', async () => {
    await db.schemas.put(manifest('app.orders', ['id'], { id: 'i64', amount: 'f64', tag: 'str' }));
    await db.rows.batch('app.orders', Array.from({ length: 3000 }, (_, i) => ({ id: i, amount: i / 4, tag: 't' })));
    const v2 = path.join(dir, 'orders-v2.toml');
    fs.writeFileSync(v2, manifest('app.orders', ['id'], { id: 'i64', amount: 'f64' })); // drops tag: every row is rewritten
    const r = await run(['migrate', 'submit', v2, '--cutover', '--poll', '100', '--max-rows-per-s', '1500', '--batch-size', '100'], { pty: true });
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/migration [0-9A-Z]{26}: Pending/);
    expect(r.out).toMatch(/migrate \|[█░=-]+\| \d+% \| \d+\/3000 rows \| \d+ rows\/s \| ETA (\d+s|-) \| Backfilling/);
    expect(r.out).toMatch(/100% \| 3000\/3000 rows \| \d+ rows\/s \| ETA (\d+s|-) \| ReadyToCutover/);
    expect(r.out).toMatch(/"state": "Completed"/);
    expect(await db.rows.get('app.orders', 8)).toEqual({ id: 8, amount: 2 });
    // by operations (JSON), not followed, throttled to a crawl: then aborted
    const ops = path.join(dir, 'orders-ops.json');
    fs.writeFileSync(ops, JSON.stringify([{ op: 'add_column', name: 'note', ty: 'str', default: 'x' }, { op: 'rename_column', from: 'amount', to: 'total' }]));
    const sub = await run(['migrate', 'submit', ops, '--schema', 'app.orders', '--no-wait', '--max-rows-per-s', '1', '--batch-size', '1']);
    const m = JSON.parse(sub.out);
    expect(m).toMatchObject({ schema: 'app.orders', plan: 'rewrite', throttle: { max_rows_per_s: 1, batch_size: 1 } });
    expect((await run(['migrate', 'submit', ops])).err).toContain('--schema is needed');
    expect(JSON.parse((await run(['migrate', 'abort', m.id])).out)).toMatchObject({ id: m.id, state: 'Aborted' });
    expect(JSON.parse((await run(['migrate', 'status', m.id])).out)).toMatchObject({ id: m.id, state: 'Aborted' });
    const late = await run(['migrate', 'cutover', m.id]);
    expect(late.code).toBe(1);
    expect(late.err).toMatch(/^error: conflict: .*Aborted/);
    const list = (await run(['migrate', 'list'])).out;
    expect(list).toMatch(new RegExp(`${m.id} \\| app.orders \\| Aborted`));
    expect(list).toMatch(/\| app.orders \| Completed \| 3000 \| +3000/);
    const audit = (await run(['migrate', 'audit', '--migration', m.id])).out;
    expect(audit.split('\n')[0]).toMatch(/^ id +\| migration +\| action +\| from +\| to +\| actor +\| at/);
    expect(audit).toMatch(/\| submit +\| NULL +\| Pending/);
    expect(audit).toMatch(/\| abort +\| \w+ +\| Aborted/);
  }, 120_000);

  it('ask and watch against the real server: rows aligned; one JSON line per change', async () => {
    const asked = await run(['ask', 'orders with amount under 1']);
    expect(asked.code).toBe(0);
    // the columns are the English engine's choice; the table is the CLI's: aligned, numbers right-aligned, a row count
    const [head, rule, ...body] = asked.out.trimEnd().split('\n');
    expect(head).toMatch(/^ id +\|.*\bamount\b/);
    expect(body.pop()).toBe('(4 rows)');
    expect(body.map((l) => l.split('|')[0].trim())).toEqual(['0', '1', '2', '3']);
    const bars = (l: string) => [...l].flatMap((ch, i) => (ch === '|' || ch === '+' ? [i] : []));
    for (const l of [rule, ...body]) expect(bars(l)).toEqual(bars(head));
    expect(body[1]).toMatch(/\s0\.25( |$)/);
    expect(asked.err).toMatch(/\(plan cache: (hit|miss)\)/);
    const w = start(['watch', 'orders with amount under 0', '-n', '2']);
    w.child.stdin.end();
    // the stream is open once a write shows up on it: write until two changes were printed
    for (let i = 0; w.child.exitCode === null && i < 200; i++) {
      await db.rows.insert('app.orders', { id: 90_000 + i, amount: -1 });
      await new Promise((r) => setTimeout(r, 50));
    }
    const r = await w.done;
    expect(r.code).toBe(0);
    const lines = r.out.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines).toHaveLength(2);
    for (const l of lines) {
      expect(l).toMatchObject({ id: expect.stringMatching(/^\d+:\d+$/), event: 'change', data: { changes: [{ schema: 'app.orders', op: 'insert' }] } });
    }
    expect(lines[1].data.lsn).toBeGreaterThan(lines[0].data.lsn);
    // resuming after the first event's id yields what came after it, not the first again
    const resumed = start(['watch', 'orders with amount under 0', '-n', '1', '--last-event-id', lines[0].id]);
    resumed.child.stdin.end();
    const again = JSON.parse((await resumed.done).out.trim().split('\n')[0]);
    // (on a replay the server may coalesce the frames after the resume point into one event)
    const keys = (e: { data: { changes: { key: number[] }[] } }) => e.data.changes.map((c) => c.key[0]);
    expect(again.data.first_lsn).toBeGreaterThan(lines[0].data.lsn);
    expect(again.data.first_lsn).toBeLessThanOrEqual(lines[1].data.lsn);
    expect(keys(again)).toEqual(expect.arrayContaining(keys(lines[1])));
    expect(keys(again)).not.toContain(keys(lines[0])[0]);
    // in a terminal, Ctrl-C ends a watch that waits for changes, at once and cleanly
    const t = start(['watch', 'orders with amount under 0'], { pty: true });
    for (let i = 0; !t.out().includes('"event":"change"') && i < 200; i++) {
      await db.rows.insert('app.orders', { id: 95_000 + i, amount: -2 });
      await new Promise((r) => setTimeout(r, 50));
    }
    t.child.stdin.write('\x03');
    const ended = await t.done;
    expect(ended.code).toBe(0);
    expect(ended.out).toMatch(/"event":"change"/);
  }, 60_000);

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
    expect((await child(['--profile', 'local', 'schema', 'list'], {})).out).toBe('app.big\napp.orders\napp.pairs\napp.people\n');
    expect((await child(['schema', 'list'], { MMDB_PROFILE: 'local' })).out).toBe('app.big\napp.orders\napp.pairs\napp.people\n');
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
