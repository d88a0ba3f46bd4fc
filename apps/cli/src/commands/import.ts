/**
 * `mmdb import <schema> <file>`: NDJSON / JSON Lines / CSV → JSON `_batch` calls of `--batch`
 * rows, each one atomic and sent with an Idempotency-Key derived from the run and the batch
 * number. A state file beside the input records the batches done, so a run that is stopped
 * (Ctrl-C, a lost connection, a crash) resumes where it stopped: batches recorded as done are
 * skipped, and a batch that was sent but not yet recorded is sent again with the same key, so
 * the server replays its answer instead of writing twice.
 */
import { createHash, randomUUID } from 'crypto';
import * as fs from 'fs';
import * as readline from 'readline';
import { Command } from 'commander';
import { SingleBar } from 'cli-progress';
import type { Mmdb } from '@mmdb/client';
import { parse } from 'smol-toml';
import { action, type Io } from '../context';
import { CsvParser } from '../csv';

export type InFormat = 'ndjson' | 'csv';

export function formatOf(file: string, given?: string): InFormat {
  const f = given ?? (/\.csv$/i.test(file) ? 'csv' : 'ndjson');
  if (f === 'jsonl' || f === 'json-lines' || f === 'ndjson') return 'ndjson';
  if (f === 'csv') return 'csv';
  throw new Error(`unknown format "${f}" (ndjson, jsonl, csv)`);
}

/** Column types of the target schema, to type CSV text. */
export async function columnTypes(db: Mmdb, schema: string): Promise<Map<string, string>> {
  const m = parse(await db.schemas.get(schema)) as { columns?: { name: string; ty: string }[] };
  return new Map((m.columns ?? []).map((c) => [c.name, c.ty]));
}

export function typeCsvValue(text: string, ty: string | undefined): unknown {
  if (text === '') return undefined;
  switch (ty) {
    case 'i64':
    case 'i32':
    case 'int':
    case 'integer':
    case 'timestamp': {
      const n = Number(text);
      return Number.isSafeInteger(n) ? n : text;
    }
    case 'f64':
    case 'f32':
    case 'float':
    case 'real':
      return Number(text);
    case 'bool':
    case 'boolean':
      return /^(true|t|1|yes)$/i.test(text);
    case 'json':
    case 'vector':
      return JSON.parse(text);
    default:
      return text;
  }
}

/** The rows of a file, lazily. */
export async function* readRows(file: string | NodeJS.ReadableStream, format: InFormat, types: Map<string, string>): AsyncGenerator<Record<string, unknown>> {
  const input = typeof file === 'string' ? fs.createReadStream(file, { encoding: 'utf8' }) : file.setEncoding('utf8');
  if (format === 'ndjson') {
    let n = 0;
    for await (const line of readline.createInterface({ input, crlfDelay: Infinity })) {
      n++;
      if (!line.trim()) continue;
      try {
        yield JSON.parse(line);
      } catch {
        throw new Error(`${typeof file === 'string' ? file : 'stdin'}:${n}: not JSON`);
      }
    }
    return;
  }
  const p = new CsvParser();
  let header: string[] | undefined;
  const toRow = (rec: string[]) => {
    const row: Record<string, unknown> = {};
    header!.forEach((h, i) => {
      const v = typeCsvValue(rec[i] ?? '', types.get(h));
      if (v !== undefined) row[h] = v;
    });
    return row;
  };
  for await (const chunk of input) {
    for (const rec of p.push(chunk as string)) {
      if (!header) header = rec.map((h) => h.trim());
      else yield toRow(rec);
    }
  }
  for (const rec of p.end()) {
    if (!header) header = rec;
    else yield toRow(rec);
  }
}

export async function countRows(file: string, format: InFormat): Promise<number> {
  let n = 0;
  for await (const _ of readRows(file, format, new Map())) n++;
  return n;
}

/** A UUID (version 8, name-based) for batch `i` of run `run`: the same batch always gets the same key. */
export function batchKey(run: string, i: number): string {
  const h = createHash('sha256').update(`${run}:${i}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h[16], 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

interface State {
  schema: string;
  size: number;
  mtimeMs: number;
  batch: number;
  run: string;
  done: number;
  rows: number;
}

export interface ImportOptions {
  format?: string;
  batch: number;
  state?: string;
  restart?: boolean;
  progress: boolean;
  /** Stop after this many batches (tests and dry runs of resumption). */
  maxBatches?: number;
}

export async function importFile(db: Mmdb, io: Io, schema: string, file: string, o: ImportOptions, stdin?: NodeJS.ReadableStream): Promise<{ rows: number; batches: number; skipped: number }> {
  const piped = file === '-';
  if (piped && !stdin) throw new Error('no standard input to read');
  const format = formatOf(piped ? '' : file, o.format);
  // From a file: resumable (state file), and counted first so the bar has a total and an ETA.
  // From stdin: neither (a pipe cannot be read twice); batches still carry idempotency keys.
  const stat = piped ? undefined : fs.statSync(file);
  const stateFile = piped ? undefined : (o.state ?? `${file}.mmdb-import.json`);
  let st: State | undefined = stateFile && !o.restart && fs.existsSync(stateFile) ? JSON.parse(fs.readFileSync(stateFile, 'utf8')) : undefined;
  if (st && (st.schema !== schema || st.size !== stat!.size || st.mtimeMs !== stat!.mtimeMs || st.batch !== o.batch)) {
    io.err.write(`note: ${stateFile} is for another file, schema or batch size: starting over\n`);
    st = undefined;
  }
  st ??= { schema, size: stat?.size ?? 0, mtimeMs: stat?.mtimeMs ?? 0, batch: o.batch, run: randomUUID(), done: 0, rows: 0 };
  if (st.done > 0) io.err.write(`resuming: ${st.done} batches (${st.rows} rows) already imported\n`);
  const types = format === 'csv' ? await columnTypes(db, schema) : new Map<string, string>();
  const total = piped ? 0 : await countRows(file, format);
  const bar = new SingleBar({
    format: piped ? 'import | {value} rows | {speed} rows/s' : 'import |{bar}| {percentage}% | {value}/{total} rows | {speed} rows/s | ETA {eta_formatted}',
    stream: io.err as NodeJS.WriteStream,
    etaBuffer: 20,
    fps: 10,
    hideCursor: true,
  });
  const t0 = Date.now();
  const resumed = st.rows;
  const speed = (v: number) => Math.round((v - resumed) / Math.max(0.001, (Date.now() - t0) / 1000));
  if (o.progress) bar.start(total, st.rows, { speed: 0 });
  let i = 0;
  let sent = 0;
  let batch: Record<string, unknown>[] = [];
  const flush = async () => {
    if (i >= st!.done) {
      await db.rows.batch(schema, batch, { idempotencyKey: batchKey(st!.run, i) });
      st!.done = i + 1;
      st!.rows += batch.length;
      if (stateFile) {
        // write-then-rename: a crash mid-write never leaves a state file that does not parse
        fs.writeFileSync(`${stateFile}.tmp`, JSON.stringify(st));
        fs.renameSync(`${stateFile}.tmp`, stateFile);
      }
      sent++;
      if (o.progress) bar.update(st!.rows, { speed: speed(st!.rows) });
    }
    i++;
    batch = [];
  };
  // Ctrl-C: the batch in flight finishes and is recorded, then the run stops (resume by running it
  // again); a second Ctrl-C stops at once (the next run resends the unrecorded batch with its key).
  let interrupted = false;
  const onSigint = () => {
    if (interrupted) process.exit(130);
    interrupted = true;
  };
  process.on('SIGINT', onSigint);
  try {
    for await (const row of readRows(piped ? stdin! : file, format, types)) {
      batch.push(row);
      if (batch.length === o.batch) {
        await flush();
        if (interrupted) throw new Interrupted(st.done, st.rows, stateFile);
        if (o.maxBatches !== undefined && sent >= o.maxBatches) return { rows: st.rows, batches: sent, skipped: resumed };
      }
    }
    if (batch.length) await flush();
  } finally {
    process.removeListener('SIGINT', onSigint);
    if (o.progress) bar.stop();
  }
  if (stateFile) fs.rmSync(stateFile, { force: true });
  return { rows: st.rows, batches: sent, skipped: resumed };
}

/** A run stopped by Ctrl-C after a recorded batch. */
export class Interrupted extends Error {
  constructor(
    readonly batches: number,
    readonly rows: number,
    stateFile: string | undefined,
  ) {
    super(`interrupted after ${batches} batches (${rows} rows)${stateFile ? `: run the same command again to resume (state in ${stateFile})` : ''}`);
  }
}

export function importCommand(io: Io, stdin?: NodeJS.ReadableStream): Command {
  return new Command('import')
    .description('load NDJSON / JSON Lines / CSV rows into a schema, resumably (a state file beside the input; idempotency keys per batch)')
    .argument('<schema>', 'target schema id (namespace.table)')
    .argument('<file>', 'input file (.ndjson, .jsonl, .csv), or - for standard input (not resumable)')
    .option('--format <format>', 'ndjson | jsonl | csv (default: from the extension)')
    .option('-b, --batch <rows>', 'rows per atomic batch', (v) => parseInt(v, 10), 1000)
    .option('--state <file>', 'state file (default: <file>.mmdb-import.json)')
    .option('--restart', 'ignore a previous run\'s state and start over')
    .option('--no-progress', 'no progress bar')
    .option('--max-batches <n>', 'stop after n batches (resume later)', (v) => parseInt(v, 10))
    .action(
      action(io, async (db, cmd, schema: string, file: string) => {
        const o = cmd.opts() as ImportOptions;
        const r = await importFile(db, io, schema, file, o, stdin).catch((e) => {
          if (e instanceof Interrupted) process.exitCode = 130; // as a shell reports a Ctrl-C
          throw e;
        });
        io.out.write(`imported ${r.rows} rows into ${schema} (${r.batches} batches sent${r.skipped ? `, ${r.skipped} rows from an earlier run` : ''})\n`);
      }),
    );
}

