import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { CsvParser } from './csv';
import { renderTable, render } from './table';
import { resolveConn, writeProfile } from './config';
import { batchKey, formatOf, typeCsvValue } from './commands/import';
import { splitStatements } from './commands/sql';

describe('csv', () => {
  it('reads quoted fields, escaped quotes, line breaks, CRLF, chunk by chunk', () => {
    const p = new CsvParser();
    const text = 'a,b\r\n"x, y","he said ""no""\r\nok"\n,\n"last"';
    const out: string[][] = [];
    for (const ch of text) out.push(...p.push(ch)); // one character at a time
    out.push(...p.end());
    expect(out).toEqual([['a', 'b'], ['x, y', 'he said "no"\r\nok'], ['', ''], ['last']]);
  });
  it('refuses an unclosed quote', () => {
    const p = new CsvParser();
    p.push('"open');
    expect(() => p.end()).toThrow(/not closed/);
  });
  it('types values by column type', () => {
    expect(typeCsvValue('42', 'i64')).toBe(42);
    expect(typeCsvValue('9007199254740993', 'i64')).toBe('9007199254740993');
    expect(typeCsvValue('1.5', 'f64')).toBe(1.5);
    expect(typeCsvValue('true', 'bool')).toBe(true);
    expect(typeCsvValue('', 'str')).toBeUndefined();
    expect(typeCsvValue('[1,2]', 'vector')).toEqual([1, 2]);
  });
});

describe('table', () => {
  it('aligns columns, right-aligns numbers, prints NULL', () => {
    expect(renderTable([{ id: 1, name: 'ann' }, { id: 10, name: null }])).toBe(' id | name\n----+------\n  1 | ann\n 10 | NULL\n(2 rows)\n');
  });
  it('csv output quotes what needs quoting', () => {
    expect(render([{ a: 'x,y', b: 'q"' }], 'csv')).toBe('a,b\n"x,y","q"""\n');
  });
});

describe('import', () => {
  it('batch keys are stable UUIDs per run and batch', () => {
    expect(batchKey('run', 1)).toBe(batchKey('run', 1));
    expect(batchKey('run', 1)).not.toBe(batchKey('run', 2));
    expect(batchKey('run', 1)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
  it('format from the extension or the flag', () => {
    expect(formatOf('x.csv')).toBe('csv');
    expect(formatOf('x.jsonl')).toBe('ndjson');
    expect(formatOf('x.txt', 'jsonl')).toBe('ndjson');
    expect(() => formatOf('x', 'xml')).toThrow(/unknown format/);
  });
  it('splits statements outside quotes', () => {
    expect(splitStatements("SELECT 'a;b'; SELECT 2;;")).toEqual(["SELECT 'a;b'", 'SELECT 2']);
  });
});

describe('config', () => {
  it('flags beat env, env beats the profile', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-cfg-')), 'c.toml');
    writeProfile(file, 'default', { url: 'https://p', token: 'ptok', tenant: 'PT' });
    const env = { MMDB_CONFIG: file, MMDB_TOKEN: 'etok' };
    expect(resolveConn({}, env)).toMatchObject({ url: 'https://p', token: 'etok', tenant: 'PT', insecure: false });
    expect(resolveConn({ token: 'ftok', insecure: true }, env)).toMatchObject({ token: 'ftok', insecure: true });
    expect(() => resolveConn({ profile: 'x' }, env)).toThrow(/no profile "x"/);
    expect(resolveConn({}, { MMDB_CONFIG: path.join(file, 'none') }).url).toBe('https://127.0.0.1:8443');
  });
});
