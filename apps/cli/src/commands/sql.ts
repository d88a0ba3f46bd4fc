/**
 * `mmdb sql`: one statement (`-c`, or statements piped on stdin), or an interactive shell
 * (psql-like): statements end with `;` and may span lines, history is kept in a file, tables
 * are printed aligned, and backslash commands describe the database.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as readline from 'readline';
import { Command } from 'commander';
import type { Mmdb, SqlResult } from '@mmdb/client';
import { parse } from 'smol-toml';
import { action, describeError, type Io } from '../context';
import { render, renderTable, type Format } from '../table';

export function printResult(io: Io, r: SqlResult<Record<string, unknown>>, format: Format): void {
  if (r.kind === 'select' || (r.rows && r.rows.length && r.kind !== 'insert')) {
    io.out.write(render(r.rows ?? [], format, r.columns?.map((c) => c.name)));
  } else if (format !== 'table') {
    io.out.write(JSON.stringify(r) + '\n');
  } else {
    const n = r.count ?? r.rows?.length;
    io.out.write(`${r.kind.toUpperCase()}${r.schema ? ` ${r.schema}` : ''}${n !== undefined ? ` ${n}` : ''}\n`);
    if (r.rows?.length) io.out.write(renderTable(r.rows));
  }
}

/** `\d`: the schemas; `\d name`: its columns, key, indexes (from its manifest). */
export async function describe(db: Mmdb, name: string | undefined): Promise<string> {
  if (!name) return renderTable((await db.schemas.list()).sort().map((id) => ({ schema: id })));
  const m = parse(await db.schemas.get(name)) as Record<string, any>;
  const pk = new Set<string>(m.primary_key ?? []);
  const cols = (m.columns ?? []).map((c: any) => ({ column: c.name, type: c.ty, required: c.required ? 'yes' : '', key: pk.has(c.name) ? 'PK' : '' }));
  let out = `Schema "${name}"\n` + renderTable(cols);
  for (const ix of m.indexes ?? []) out += `index ${ix.name} (${(ix.columns ?? []).join(', ')})${ix.unique ? ' unique' : ''}\n`;
  for (const r of m.relations ?? []) out += `relation ${r.name} → ${r.target}\n`;
  for (const f of m.fulltext ?? []) out += `full-text ${f.field}\n`;
  if (m.vector) out += `vector ${m.vector.column ?? ''} dim ${m.vector.dim} ${m.vector.metric ?? ''}\n`;
  return out;
}

const HELP = `\\d            list schemas
\\d NAME       describe a schema (columns, key, indexes, relations)
\\format F     table | json | ndjson | csv
\\timing       toggle timing
\\q            quit
End a statement with ; (it may span lines).
`;

export async function shell(db: Mmdb, io: Io, input: NodeJS.ReadableStream, format: Format, historyFile: string): Promise<void> {
  const history = fs.existsSync(historyFile) ? fs.readFileSync(historyFile, 'utf8').split('\n').filter(Boolean).reverse().slice(0, 500) : [];
  const rl = readline.createInterface({ input, output: io.out, terminal: (io.out as NodeJS.WriteStream).isTTY === true, history, historySize: 500 });
  let buf = '';
  let timing = false;
  const prompt = () => rl.setPrompt(buf ? '   ...> ' : 'mmdb> ');
  const save = (line: string) => fs.appendFileSync(historyFile, line.replace(/\n/g, ' ') + '\n');
  io.out.write(`mmdb sql shell, connected to ${db.transport.base}. \\? for help, \\q to quit.\n`);
  prompt();
  rl.prompt();
  for await (const line of rl) {
    const t = line.trim();
    try {
      if (!buf && t.startsWith('\\')) {
        save(t);
        const [cmd, arg] = t.split(/\s+/, 2);
        if (cmd === '\\q') break;
        else if (cmd === '\\d') io.out.write(await describe(db, arg));
        else if (cmd === '\\timing') io.out.write(`Timing is ${(timing = !timing) ? 'on' : 'off'}.\n`);
        else if (cmd === '\\format' && ['table', 'json', 'ndjson', 'csv'].includes(arg)) format = arg as Format;
        else io.out.write(HELP);
      } else if (t) {
        buf += (buf ? '\n' : '') + line;
        if (t.endsWith(';')) {
          const sql = buf;
          const lines = sql.split('\n').length;
          buf = '';
          save(sql);
          // ↑ recalls the whole statement (as psql does), not its last line
          const h = (rl as unknown as { history?: string[] }).history;
          if (h && lines > 1) h.splice(0, lines, sql.replace(/\n/g, ' '));
          const t0 = performance.now();
          printResult(io, await db.sql<Record<string, unknown>>(sql), format);
          if (timing) io.out.write(`Time: ${(performance.now() - t0).toFixed(1)} ms\n`);
        }
      }
    } catch (e) {
      buf = '';
      io.out.write(describeError(e) + '\n');
    }
    prompt();
    rl.prompt();
  }
  rl.close();
}

export function sqlCommand(io: Io, stdin: NodeJS.ReadableStream): Command {
  return new Command('sql')
    .description('run SQL: -c "statement", statements on stdin, or an interactive shell (history, aligned tables, \\d)')
    .option('-c, --command <sql>', 'run one statement and exit')
    .option('-p, --param <value...>', 'bind $1, $2, … (JSON values, else strings)')
    .option('-f, --format <format>', 'table | json | ndjson | csv', 'table')
    .option('-i, --interactive', 'the shell even when stdin is not a terminal')
    .option('--history <file>', 'history file', process.env.MMDB_HISTORY ?? path.join(os.homedir(), '.mmdb_history'))
    .action(
      action(io, async (db, cmd) => {
        const o = cmd.opts() as { command?: string; param?: string[]; format: Format; history: string; interactive?: boolean };
        const params = o.param?.map((p) => {
          try {
            return JSON.parse(p);
          } catch {
            return p;
          }
        });
        if (o.command) return printResult(io, await db.sql<Record<string, unknown>>(o.command, params), o.format);
        if ((stdin as NodeJS.ReadStream).isTTY || o.interactive) return shell(db, io, stdin, o.format, o.history);
        let text = '';
        for await (const c of stdin) text += c;
        for (const stmt of splitStatements(text)) printResult(io, await db.sql<Record<string, unknown>>(stmt, params), o.format);
      }),
    );
}

/** Splits a script on `;` outside quotes. */
export function splitStatements(text: string): string[] {
  const out: string[] = [];
  let cur = '';
  let q: string | null = null;
  for (const ch of text) {
    if (q) {
      if (ch === q) q = null;
    } else if (ch === "'" || ch === '"') q = ch;
    else if (ch === ';') {
      if (cur.trim()) out.push(cur.trim());
      cur = '';
      continue;
    }
    cur += ch;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}
