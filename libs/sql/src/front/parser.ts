import { DbError } from '@mmdb/core';
import { COLLATIONS, type Collation } from '@mmdb/plan';
import { syntaxError, tokenize, type Token } from './lexer';
import type { AExpr, ColumnSpec, Cte, FrameBoundSpec, FromItem, OrderItem, ResultCol, Select, SelectBody, SelectCore, Stmt, WindowSpec } from './ast';

const RESERVED = new Set(
  ('SELECT FROM WHERE GROUP HAVING ORDER LIMIT OFFSET UNION INTERSECT EXCEPT ALL DISTINCT ON JOIN INNER LEFT RIGHT FULL OUTER ' +
    'CROSS NATURAL USING AS AND OR NOT IS IN LIKE GLOB BETWEEN CASE WHEN THEN ELSE END NULL EXISTS CAST COLLATE ESCAPE VALUES ' +
    'SET INTO RETURNING WINDOW BY ISNULL NOTNULL CREATE TABLE INSERT UPDATE DELETE DROP PRIMARY REFERENCES CHECK DEFAULT ' +
    'CONSTRAINT UNIQUE FOREIGN WITH REGEXP MATCH').split(' '),
);

function unsupported(construct: string): never {
  throw new DbError('unsupported_sql', `${construct} is not supported`, { construct });
}

/** Parses a SQL script into statements. */
export function parseSql(sql: string): Stmt[] {
  return new Parser(sql).script();
}

class Parser {
  private toks: Token[];
  private p = 0;
  private paramCount = 0;
  constructor(private readonly sql: string) {
    this.toks = tokenize(sql);
  }

  // ---- token helpers
  private get cur(): Token { return this.toks[this.p]; }
  private atEnd(): boolean { return this.toks[this.p].kind === 'eof'; }
  private peek(k = 1): Token { return this.toks[Math.min(this.p + k, this.toks.length - 1)]; }
  private isKw(kw: string, t: Token = this.cur): boolean { return t.kind === 'id' && t.upper === kw; }
  private isOp(op: string, t: Token = this.cur): boolean { return t.kind === 'op' && t.text === op; }
  private eatKw(kw: string): boolean { if (this.isKw(kw)) { this.p++; return true; } return false; }
  private eatOp(op: string): boolean { if (this.isOp(op)) { this.p++; return true; } return false; }
  private err(msg?: string): never {
    const t = this.cur;
    syntaxError(this.sql, t.pos, msg ?? (t.kind === 'eof' ? 'incomplete input' : `near "${t.text}"`));
  }
  private kw(kw: string): void { if (!this.eatKw(kw)) this.err(`expected ${kw} near "${this.cur.text}"`); }
  private op(op: string): void { if (!this.eatOp(op)) this.err(`expected "${op}" near "${this.cur.text}"`); }
  private name(): string {
    const t = this.cur;
    if (t.kind === 'qid' || t.kind === 'str' || (t.kind === 'id' && !RESERVED.has(t.upper))) { this.p++; return t.text; }
    return this.err(`expected a name near "${t.text}"`);
  }
  /** A possibly qualified name `ns.t`. */
  private qname(): string {
    let n = this.name();
    if (this.eatOp('.')) n = `${n}.${this.name()}`;
    return n;
  }

  script(): Stmt[] {
    const out: Stmt[] = [];
    while (this.cur.kind !== 'eof') {
      if (this.eatOp(';')) continue;
      out.push(this.statement());
      if (!this.atEnd() && !this.isOp(';')) this.err();
    }
    return out;
  }

  statement(): Stmt {
    const t = this.cur;
    if (this.isKw('SELECT') || this.isKw('WITH') || this.isKw('VALUES') || this.isOp('(')) return this.select();
    if (this.isKw('EXPLAIN')) unsupported('EXPLAIN');
    if (this.isKw('INSERT') || this.isKw('REPLACE')) return this.insert();
    if (this.eatKw('UPDATE')) return this.update();
    if (this.eatKw('DELETE')) {
      this.kw('FROM');
      const table = this.qname();
      const alias = this.alias();
      const where = this.eatKw('WHERE') ? this.expr() : undefined;
      return { kind: 'delete', table, alias, where };
    }
    if (this.eatKw('CREATE')) return this.create();
    if (this.eatKw('DROP')) {
      const w = this.cur.upper;
      if (!['TABLE', 'INDEX', 'VIEW', 'TRIGGER'].includes(w)) this.err();
      this.p++;
      let ifExists = false;
      if (this.eatKw('IF')) { this.kw('EXISTS'); ifExists = true; }
      return { kind: 'drop', what: w.toLowerCase() as 'table', name: this.qname(), ifExists };
    }
    if (this.eatKw('ALTER')) {
      this.kw('TABLE');
      const table = this.qname();
      if (this.eatKw('RENAME')) {
        if (this.eatKw('TO')) unsupported('ALTER TABLE RENAME TO');
        this.eatKw('COLUMN');
        const from = this.name();
        this.kw('TO');
        return { kind: 'alter_rename', table, from, to: this.name() };
      }
      if (this.eatKw('DROP')) {
        this.eatKw('COLUMN');
        return { kind: 'alter_drop', table, column: this.name() };
      }
      this.kw('ADD');
      this.eatKw('COLUMN');
      return { kind: 'alter_add', table, column: this.columnDef([], []) };
    }
    if (this.eatKw('BEGIN')) { if (!this.eatKw('DEFERRED') && !this.eatKw('IMMEDIATE')) this.eatKw('EXCLUSIVE'); this.eatKw('TRANSACTION'); return { kind: 'begin' }; }
    if (this.eatKw('COMMIT') || this.eatKw('END')) { this.eatKw('TRANSACTION'); return { kind: 'commit' }; }
    if (this.eatKw('ROLLBACK')) { this.eatKw('TRANSACTION'); if (this.isKw('TO')) unsupported('ROLLBACK TO SAVEPOINT'); return { kind: 'rollback' }; }
    if (this.eatKw('REINDEX')) { const name = this.cur.kind === 'eof' || this.isOp(';') ? undefined : this.qname(); return { kind: 'reindex', name }; }
    for (const k of ['PRAGMA', 'VACUUM', 'ANALYZE', 'ATTACH', 'DETACH', 'SAVEPOINT', 'RELEASE']) if (this.isKw(k)) unsupported(k);
    return syntaxError(this.sql, t.pos, `near "${t.text}"`);
  }

  // ---- DDL
  private create(): Stmt {
    const unique = this.eatKw('UNIQUE');
    if (this.eatKw('TEMP') || this.eatKw('TEMPORARY')) { /* same as a table here */ }
    if (this.eatKw('INDEX')) {
      let ifNotExists = false;
      if (this.eatKw('IF')) { this.kw('NOT'); this.kw('EXISTS'); ifNotExists = true; }
      // the name is optional (PostgreSQL / pgvector: CREATE INDEX ON items USING hnsw (embedding vector_l2_ops))
      const name = this.isKw('ON') ? '' : this.qname();
      this.kw('ON');
      const table = this.qname();
      const using = this.eatKw('USING') ? this.name().toLowerCase() : undefined;
      this.op('(');
      const columns: string[] = [];
      let opclass: string | undefined;
      do {
        columns.push(this.name());
        if (this.eatKw('COLLATE')) this.name();
        if (this.cur.kind === 'id' && !['ASC', 'DESC', 'NULLS'].includes(this.cur.upper)) opclass = this.name().toLowerCase();
        if (!this.eatKw('ASC')) this.eatKw('DESC');
      } while (this.eatOp(','));
      this.op(')');
      let withParams: Record<string, number> | undefined;
      if (this.eatKw('WITH')) {
        withParams = {};
        this.op('(');
        do {
          const k = this.name().toLowerCase();
          this.op('=');
          const v = this.cur;
          if (v.kind !== 'int') this.err(`expected an integer for ${k}`);
          this.p++;
          withParams[k] = Number(v.text);
        } while (this.eatOp(','));
        this.op(')');
      }
      if (this.eatKw('WHERE')) unsupported('partial index');
      return { kind: 'create_index', name: name || `${table.slice(table.lastIndexOf('.') + 1)}_${columns.join('_')}_idx`, table, columns, unique, ifNotExists, ...(using ? { using } : {}), ...(opclass ? { opclass } : {}), ...(withParams ? { with: withParams } : {}) };
    }
    if (unique) this.err();
    if (this.eatKw('VIEW')) {
      let ifNotExists = false;
      if (this.eatKw('IF')) { this.kw('NOT'); this.kw('EXISTS'); ifNotExists = true; }
      const name = this.qname();
      if (this.isOp('(')) unsupported('view column list');
      this.kw('AS');
      const start = this.cur.pos;
      const select = this.select();
      return { kind: 'create_view', name, ifNotExists, select, text: this.sql.slice(start, this.cur.pos) };
    }
    if (this.isKw('TRIGGER')) unsupported('CREATE TRIGGER');
    if (this.isKw('VIRTUAL')) unsupported('CREATE VIRTUAL TABLE');
    this.kw('TABLE');
    let ifNotExists = false;
    if (this.eatKw('IF')) { this.kw('NOT'); this.kw('EXISTS'); ifNotExists = true; }
    const name = this.qname();
    if (this.eatKw('AS')) {
      return { kind: 'create_table', name, ifNotExists, columns: [], uniques: [], checks: [], foreignKeys: [], asSelect: this.select() };
    }
    this.op('(');
    const columns: ColumnSpec[] = [];
    const uniques: string[][] = [];
    const checks: { name?: string; expr: AExpr; text: string }[] = [];
    const foreignKeys: { columns: string[]; table: string; refColumns: string[] }[] = [];
    let primaryKey: string[] | undefined;
    do {
      let cname: string | undefined;
      if (this.eatKw('CONSTRAINT')) cname = this.name();
      if (this.eatKw('PRIMARY')) {
        this.kw('KEY');
        primaryKey = this.nameList(true);
        this.conflictClause();
      } else if (this.eatKw('UNIQUE')) {
        uniques.push(this.nameList(true));
        this.conflictClause();
      } else if (this.eatKw('CHECK')) {
        this.op('(');
        const s = this.cur.pos;
        const expr = this.expr();
        checks.push({ name: cname, expr, text: this.sql.slice(s, this.cur.pos) });
        this.op(')');
      } else if (this.eatKw('FOREIGN')) {
        this.kw('KEY');
        const cols = this.nameList(false);
        const ref = this.references();
        foreignKeys.push({ columns: cols, table: ref.table, refColumns: ref.columns });
      } else {
        columns.push(this.columnDef(checks, foreignKeys));
      }
    } while (this.eatOp(','));
    this.op(')');
    if (this.eatKw('WITHOUT')) this.name();
    if (this.eatKw('STRICT')) { /* strict typing is what we do anyway */ }
    return { kind: 'create_table', name, ifNotExists, columns, primaryKey, uniques, checks, foreignKeys };
  }

  private conflictClause(): void {
    if (this.eatKw('ON')) { this.kw('CONFLICT'); this.name(); }
  }

  private nameList(allowOrder: boolean): string[] {
    this.op('(');
    const out: string[] = [];
    do {
      out.push(this.name());
      if (allowOrder) { if (this.eatKw('COLLATE')) this.name(); if (!this.eatKw('ASC')) this.eatKw('DESC'); }
    } while (this.eatOp(','));
    this.op(')');
    return out;
  }

  private references(): { table: string; columns: string[] } {
    this.kw('REFERENCES');
    const table = this.qname();
    const columns = this.isOp('(') ? this.nameList(false) : [];
    while (this.isKw('ON') || this.isKw('MATCH') || this.isKw('DEFERRABLE') || this.isKw('NOT')) {
      if (this.eatKw('ON')) { this.name(); if (this.eatKw('SET')) this.name(); else if (this.eatKw('NO')) this.name(); else this.name(); }
      else if (this.eatKw('MATCH')) this.name();
      else { this.eatKw('NOT'); this.kw('DEFERRABLE'); if (this.eatKw('INITIALLY')) this.name(); }
    }
    return { table, columns };
  }

  private columnDef(checks: { name?: string; expr: AExpr; text: string }[], fks: { columns: string[]; table: string; refColumns: string[] }[]): ColumnSpec {
    const name = this.name();
    const typeParts: string[] = [];
    while ((this.cur.kind === 'id' && !RESERVED.has(this.cur.upper)) || this.cur.kind === 'qid') {
      typeParts.push(this.cur.text);
      this.p++;
    }
    const typeArgs: string[] = [];
    if (this.eatOp('(')) {
      while (!this.isOp(')')) { if (this.cur.kind === 'eof') this.err(); if (!this.isOp(',')) typeArgs.push(this.cur.text); this.p++; }
      this.op(')');
    }
    const c: ColumnSpec = { name, type: typeParts.join(' '), pk: false, notNull: false, unique: false };
    if (/^vector$/i.test(c.type) && typeArgs.length === 1 && /^\d+$/.test(typeArgs[0])) c.dim = Number(typeArgs[0]);
    for (;;) {
      let cname: string | undefined;
      if (this.eatKw('CONSTRAINT')) cname = this.name();
      if (this.eatKw('PRIMARY')) {
        this.kw('KEY');
        c.pk = true;
        if (this.eatKw('DESC')) c.pkDesc = true; else this.eatKw('ASC');
        this.conflictClause();
        if (this.eatKw('AUTOINCREMENT')) c.autoinc = true;
      } else if (this.eatKw('NOT')) { this.kw('NULL'); c.notNull = true; this.conflictClause(); }
      else if (this.eatKw('NULL')) { /* nullable */ }
      else if (this.eatKw('UNIQUE')) { c.unique = true; this.conflictClause(); }
      else if (this.eatKw('CHECK')) {
        this.op('(');
        const s = this.cur.pos;
        const expr = this.expr();
        checks.push({ name: cname, expr, text: this.sql.slice(s, this.cur.pos) });
        this.op(')');
      } else if (this.eatKw('DEFAULT')) {
        if (this.eatOp('(')) { c.default = this.expr(); this.op(')'); }
        else if (this.isOp('-') || this.isOp('+')) { const neg = this.cur.text === '-'; this.p++; const e = this.primary(); c.default = neg ? { t: 'unary', op: '-', arg: e } : e; }
        else c.default = this.primary();
      } else if (this.isKw('REFERENCES')) {
        const r = this.references();
        fks.push({ columns: [name], table: r.table, refColumns: r.columns });
      } else if (this.eatKw('COLLATE')) c.collate = this.collation();
      else if (this.eatKw('GENERATED') || this.isKw('AS')) unsupported('generated column');
      else break;
    }
    return c;
  }

  // ---- DML
  private insert(): Stmt {
    let orConflict: 'replace' | 'ignore' | 'abort' | 'fail' | 'rollback' | undefined;
    if (this.eatKw('REPLACE')) orConflict = 'replace';
    else {
      this.kw('INSERT');
      if (this.eatKw('OR')) orConflict = this.name().toLowerCase() as 'replace';
    }
    this.kw('INTO');
    const table = this.qname();
    if (this.eatKw('AS')) this.name();
    let columns: string[] | undefined;
    if (this.isOp('(')) columns = this.nameList(false);
    let source: Select;
    if (this.eatKw('DEFAULT')) { this.kw('VALUES'); source = { kind: 'select', body: { t: 'values', rows: [[]] } }; }
    else source = this.select();
    if (this.isKw('ON')) unsupported('ON CONFLICT upsert');
    const returning = this.eatKw('RETURNING') ? this.resultCols() : undefined;
    return { kind: 'insert', table, columns, source, orConflict, returning };
  }

  private update(): Stmt {
    if (this.eatKw('OR')) this.name();
    const table = this.qname();
    const alias = this.alias();
    this.kw('SET');
    const sets: { column: string; expr: AExpr }[] = [];
    do {
      if (this.isOp('(')) unsupported('row-value SET');
      const column = this.name();
      this.op('=');
      sets.push({ column, expr: this.expr() });
    } while (this.eatOp(','));
    if (this.isKw('FROM')) unsupported('UPDATE … FROM');
    const where = this.eatKw('WHERE') ? this.expr() : undefined;
    const returning = this.eatKw('RETURNING') ? this.resultCols() : undefined;
    return { kind: 'update', table, alias, sets, where, returning };
  }

  // ---- SELECT
  select(): Select {
    let withc: Select['with'];
    if (this.eatKw('WITH')) {
      const recursive = this.eatKw('RECURSIVE');
      const ctes: Cte[] = [];
      do {
        const name = this.name();
        const columns = this.isOp('(') ? this.nameList(false) : undefined;
        this.kw('AS');
        if (this.eatKw('NOT')) this.kw('MATERIALIZED'); else this.eatKw('MATERIALIZED');
        this.op('(');
        const select = this.select();
        this.op(')');
        ctes.push({ name, columns, select });
      } while (this.eatOp(','));
      withc = { recursive, ctes };
    }
    let body: SelectBody = this.selectCore();
    for (;;) {
      let op: 'union' | 'intersect' | 'except' | undefined;
      if (this.eatKw('UNION')) op = 'union';
      else if (this.eatKw('INTERSECT')) op = 'intersect';
      else if (this.eatKw('EXCEPT')) op = 'except';
      if (!op) break;
      const all = this.eatKw('ALL');
      if (!all) this.eatKw('DISTINCT');
      body = { t: 'compound', op, all, left: body, right: this.selectCore() };
    }
    const s: Select = { kind: 'select', with: withc, body };
    if (this.eatKw('ORDER')) {
      this.kw('BY');
      s.orderBy = this.orderList();
    }
    if (this.eatKw('LIMIT')) {
      const a = this.expr();
      if (this.eatKw('OFFSET')) { s.limit = a; s.offset = this.expr(); }
      else if (this.eatOp(',')) { s.offset = a; s.limit = this.expr(); }
      else s.limit = a;
    }
    return s;
  }

  /** `( [base] [PARTITION BY …] [ORDER BY …] [frame] )` */
  private windowSpec(): WindowSpec {
    this.op('(');
    const spec: WindowSpec = {};
    if (this.cur.kind === 'id' && !['PARTITION', 'ORDER', 'RANGE', 'ROWS', 'GROUPS'].includes(this.cur.upper)) spec.base = this.name().toLowerCase();
    if (this.eatKw('PARTITION')) {
      this.kw('BY');
      spec.partition = [];
      do spec.partition.push(this.expr()); while (this.eatOp(','));
    }
    if (this.eatKw('ORDER')) {
      this.kw('BY');
      spec.order = this.orderList();
    }
    if (this.isKw('RANGE') || this.isKw('ROWS') || this.isKw('GROUPS')) {
      const unit = this.cur.upper.toLowerCase() as 'rows' | 'range' | 'groups';
      this.p++;
      let start: FrameBoundSpec;
      let end: FrameBoundSpec = { type: 'current_row' };
      if (this.eatKw('BETWEEN')) {
        start = this.frameBound();
        this.kw('AND');
        end = this.frameBound();
      } else start = this.frameBound();
      let exclude: 'no_others' | 'current_row' | 'group' | 'ties' | undefined;
      if (this.eatKw('EXCLUDE')) {
        if (this.eatKw('NO')) { this.kw('OTHERS'); exclude = 'no_others'; }
        else if (this.eatKw('CURRENT')) { this.kw('ROW'); exclude = 'current_row'; }
        else if (this.eatKw('GROUP')) exclude = 'group';
        else { this.kw('TIES'); exclude = 'ties'; }
      }
      spec.frame = { unit, start, end, ...(exclude ? { exclude } : {}) };
    }
    this.op(')');
    return spec;
  }

  private frameBound(): FrameBoundSpec {
    if (this.eatKw('UNBOUNDED')) {
      if (this.eatKw('PRECEDING')) return { type: 'unbounded_preceding' };
      this.kw('FOLLOWING');
      return { type: 'unbounded_following' };
    }
    if (this.isKw('CURRENT') && this.peek().upper === 'ROW') { this.p += 2; return { type: 'current_row' }; }
    const offset = this.bitExpr();
    if (this.eatKw('PRECEDING')) return { type: 'preceding', offset };
    this.kw('FOLLOWING');
    return { type: 'following', offset };
  }

  private orderList(): OrderItem[] {
    const out: OrderItem[] = [];
    do {
      let expr = this.expr();
      if (this.eatKw('COLLATE')) expr = { t: 'collate', arg: expr, name: this.collation() };
      const desc = this.eatKw('DESC') ? true : (this.eatKw('ASC'), false);
      let nulls: 'first' | 'last' | undefined;
      if (this.eatKw('NULLS')) nulls = this.eatKw('FIRST') ? 'first' : (this.kw('LAST'), 'last');
      out.push({ expr, desc, nulls });
    } while (this.eatOp(','));
    return out;
  }

  private selectCore(): SelectBody {
    if (this.eatOp('(')) {
      // a parenthesized compound member is not SQLite syntax, but accept a nested select
      const inner = this.select();
      this.op(')');
      if (inner.orderBy || inner.limit || inner.with) unsupported('ORDER BY/LIMIT inside a compound member');
      return inner.body;
    }
    if (this.eatKw('VALUES')) {
      const rows: AExpr[][] = [];
      do {
        this.op('(');
        const row: AExpr[] = [];
        do row.push(this.expr()); while (this.eatOp(','));
        this.op(')');
        rows.push(row);
      } while (this.eatOp(','));
      return { t: 'values', rows };
    }
    this.kw('SELECT');
    const distinct = this.eatKw('DISTINCT') ? true : (this.eatKw('ALL'), false);
    const core: SelectCore = { t: 'core', distinct, columns: this.resultCols() };
    if (this.eatKw('FROM')) core.from = this.fromClause();
    if (this.eatKw('WHERE')) core.where = this.expr();
    if (this.eatKw('GROUP')) {
      this.kw('BY');
      core.groupBy = [];
      do core.groupBy.push(this.expr()); while (this.eatOp(','));
    }
    if (this.eatKw('HAVING')) core.having = this.expr();
    if (this.eatKw('WINDOW')) {
      core.windows = {};
      do {
        const name = this.name().toLowerCase();
        this.kw('AS');
        core.windows[name] = this.windowSpec();
      } while (this.eatOp(','));
    }
    return core;
  }

  private resultCols(): ResultCol[] {
    const cols: ResultCol[] = [];
    do {
      if (this.eatOp('*')) { cols.push({ t: 'star' }); continue; }
      if ((this.cur.kind === 'id' || this.cur.kind === 'qid') && this.isOp('.', this.peek()) && this.isOp('*', this.peek(2))) {
        const table = this.cur.text;
        this.p += 3;
        cols.push({ t: 'star', table });
        continue;
      }
      const start = this.cur.pos;
      const expr = this.expr();
      const text = this.sql.slice(start, this.toks[this.p - 1].end);
      cols.push({ t: 'expr', expr, alias: this.alias(), text });
    } while (this.eatOp(','));
    return cols;
  }

  private alias(): string | undefined {
    if (this.eatKw('AS')) return this.name();
    const t = this.cur;
    if (t.kind === 'qid' || t.kind === 'str' || (t.kind === 'id' && !RESERVED.has(t.upper))) { this.p++; return t.text; }
    return undefined;
  }

  private fromClause(): FromItem {
    let left = this.fromItem();
    for (;;) {
      if (this.eatOp(',')) { left = { t: 'join', kind: 'cross', left, right: this.fromItem() }; continue; }
      if (this.isKw('NATURAL')) unsupported('NATURAL JOIN');
      let kind: 'inner' | 'left' | 'right' | 'full' | 'cross' | undefined;
      if (this.eatKw('JOIN')) kind = 'inner';
      else if (this.eatKw('INNER')) { this.kw('JOIN'); kind = 'inner'; }
      else if (this.eatKw('CROSS')) { this.kw('JOIN'); kind = 'cross'; }
      else if (this.isKw('LEFT') || this.isKw('RIGHT') || this.isKw('FULL')) {
        kind = this.cur.upper.toLowerCase() as 'left';
        this.p++;
        this.eatKw('OUTER');
        this.kw('JOIN');
      }
      if (!kind) break;
      const right = this.fromItem();
      let on: AExpr | undefined;
      let using: string[] | undefined;
      if (this.eatKw('ON')) on = this.expr();
      else if (this.eatKw('USING')) using = this.nameList(false);
      left = { t: 'join', kind: kind === 'cross' && on ? 'inner' : kind, left, right, on, using };
    }
    return left;
  }

  private fromItem(): FromItem {
    if (this.eatOp('(')) {
      if (this.isKw('SELECT') || this.isKw('WITH') || this.isKw('VALUES')) {
        const select = this.select();
        this.op(')');
        return { t: 'sub', select, alias: this.alias() };
      }
      const inner = this.fromClause();
      this.op(')');
      return inner;
    }
    const name = this.qname();
    if (this.eatOp('(')) {
      const args: AExpr[] = [];
      if (!this.isOp(')')) do args.push(this.expr()); while (this.eatOp(','));
      this.op(')');
      return { t: 'tvf', name, args, alias: this.alias() };
    }
    const alias = this.alias();
    if (this.eatKw('INDEXED')) { this.kw('BY'); this.name(); } else if (this.eatKw('NOT')) this.kw('INDEXED');
    return { t: 'table', name, alias };
  }

  // ---- expressions
  expr(): AExpr { return this.orExpr(); }

  private orExpr(): AExpr {
    let l = this.andExpr();
    while (this.eatKw('OR')) l = { t: 'bin', op: 'or', l, r: this.andExpr() };
    return l;
  }
  private andExpr(): AExpr {
    let l = this.notExpr();
    while (this.eatKw('AND')) l = { t: 'bin', op: 'and', l, r: this.notExpr() };
    return l;
  }
  private notExpr(): AExpr {
    if (this.eatKw('NOT')) return { t: 'unary', op: 'not', arg: this.notExpr() };
    return this.eqExpr();
  }
  private eqExpr(): AExpr {
    let l = this.cmpExpr();
    for (;;) {
      const t = this.cur;
      if (this.isOp('=') || this.isOp('==')) { this.p++; l = { t: 'bin', op: '=', l, r: this.cmpExpr() }; continue; }
      if (this.isOp('!=') || this.isOp('<>')) { this.p++; l = { t: 'bin', op: '<>', l, r: this.cmpExpr() }; continue; }
      if (this.eatKw('IS')) {
        let not = this.eatKw('NOT');
        if (this.eatKw('DISTINCT')) { this.kw('FROM'); not = !not; }
        l = { t: 'bin', op: not ? 'is not' : 'is', l, r: this.cmpExpr() };
        continue;
      }
      if (this.eatKw('ISNULL')) { l = { t: 'isnull', arg: l, not: false }; continue; }
      if (this.eatKw('NOTNULL')) { l = { t: 'isnull', arg: l, not: true }; continue; }
      let not = false;
      if (this.isKw('NOT') && ['IN', 'LIKE', 'GLOB', 'BETWEEN', 'NULL', 'REGEXP', 'MATCH'].includes(this.peek().upper) && this.peek().kind === 'id') {
        this.p++;
        not = true;
      }
      if (this.eatKw('NULL')) {
        if (!not) { this.p--; break; }
        l = { t: 'isnull', arg: l, not: true };
        continue;
      }
      if (this.eatKw('IN')) { l = this.inRest(l, not); continue; }
      if (this.isKw('LIKE') || this.isKw('GLOB')) {
        const glob = this.cur.upper === 'GLOB';
        this.p++;
        const pattern = this.cmpExpr();
        const escape = this.eatKw('ESCAPE') ? this.cmpExpr() : undefined;
        l = { t: 'like', arg: l, pattern, escape, not, glob };
        continue;
      }
      if (this.isKw('REGEXP') || this.isKw('MATCH')) unsupported(this.cur.upper);
      if (this.eatKw('BETWEEN')) {
        // As in SQLite's grammar: nothing can close the BETWEEN before its AND, so the lower bound
        // takes comparisons too (`x BETWEEN a = b AND c`); the upper bound stops at the operators
        // of BETWEEN's own level (left-associative), so `x BETWEEN a AND b = c` is `(…) = c`.
        const low = this.notExpr();
        this.kw('AND');
        const high = this.cmpExpr();
        l = { t: 'between', arg: l, low, high, not };
        continue;
      }
      if (not) { this.p = this.toks.indexOf(t); }
      break;
    }
    return l;
  }

  private inRest(arg: AExpr, not: boolean): AExpr {
    if (!this.isOp('(')) {
      return { t: 'in', arg, table: this.qname(), not };
    }
    this.op('(');
    if (this.isKw('SELECT') || this.isKw('WITH') || this.isKw('VALUES')) {
      const select = this.select();
      this.op(')');
      return { t: 'in', arg, select, not };
    }
    const list: AExpr[] = [];
    if (!this.isOp(')')) do list.push(this.expr()); while (this.eatOp(','));
    this.op(')');
    return { t: 'in', arg, list, not };
  }

  private cmpExpr(): AExpr {
    let l = this.bitExpr();
    // `col @@ query`: the full-text predicate (as PostgreSQL's text search match), compiled to fts_search
    while (this.isOp('<') || this.isOp('<=') || this.isOp('>') || this.isOp('>=') || this.isOp('@@')) {
      const op = this.cur.text;
      this.p++;
      l = { t: 'bin', op, l, r: this.bitExpr() };
    }
    return l;
  }
  private bitExpr(): AExpr {
    let l = this.addExpr();
    // pgvector's distance operators bind like the bit operators (tighter than comparisons)
    while (this.isOp('&') || this.isOp('|') || this.isOp('<<') || this.isOp('>>') || this.isOp('<->') || this.isOp('<=>') || this.isOp('<#>') || this.isOp('<+>')) {
      const op = this.cur.text;
      this.p++;
      l = { t: 'bin', op, l, r: this.addExpr() };
    }
    return l;
  }
  private addExpr(): AExpr {
    let l = this.mulExpr();
    while (this.isOp('+') || this.isOp('-')) {
      const op = this.cur.text;
      this.p++;
      l = { t: 'bin', op, l, r: this.mulExpr() };
    }
    return l;
  }
  private mulExpr(): AExpr {
    let l = this.concatExpr();
    while (this.isOp('*') || this.isOp('/') || this.isOp('%')) {
      const op = this.cur.text;
      this.p++;
      l = { t: 'bin', op, l, r: this.concatExpr() };
    }
    return l;
  }
  private concatExpr(): AExpr {
    let l = this.unaryExpr();
    while (this.isOp('||') || this.isOp('->') || this.isOp('->>')) {
      const op = this.cur.text;
      this.p++;
      // X -> P and X ->> P are calls of the JSON functions of the same name (exec/json-functions.ts)
      l = op === '||' ? { t: 'bin', op: '||', l, r: this.unaryExpr() } : { t: 'fn', name: op, args: [l, this.unaryExpr()], distinct: false, star: false };
    }
    return l;
  }
  private unaryExpr(): AExpr {
    if (this.isOp('-') || this.isOp('+') || this.isOp('~')) {
      const op = this.cur.text as '-' | '+' | '~';
      this.p++;
      const arg = this.unaryExpr();
      // fold -<integer literal> so that -9223372036854775808 stays an integer
      if (op === '-' && arg.t === 'lit' && typeof arg.v === 'bigint') return { t: 'lit', v: -arg.v };
      if (op === '-' && arg.t === 'lit' && typeof arg.v === 'number' && (arg as { big?: boolean }).big) {
        if (arg.v === 9223372036854775808) return { t: 'lit', v: -9223372036854775808n };
      }
      return { t: 'unary', op, arg };
    }
    let e = this.primary();
    while (this.eatKw('COLLATE')) e = { t: 'collate', arg: e, name: this.collation() };
    return e;
  }

  /** The name after COLLATE: one of SQLite's built-in collating sequences. */
  private collation(): Collation {
    const n = this.name();
    const c = n.toLowerCase() as Collation;
    if (!COLLATIONS.includes(c)) throw new DbError('validation_failed', `no such collation sequence: ${n}`, { collation: n });
    return c;
  }

  primary(): AExpr {
    const t = this.cur;
    switch (t.kind) {
      case 'int': {
        this.p++;
        const b = BigInt(t.text);
        if (b > 9223372036854775807n) return { t: 'lit', v: Number(t.text), big: true } as AExpr;
        return { t: 'lit', v: b };
      }
      case 'real':
        this.p++;
        return { t: 'lit', v: Number(t.text.endsWith('.') ? t.text + '0' : t.text) };
      case 'str':
        this.p++;
        return { t: 'lit', v: t.text };
      case 'blob':
        unsupported('BLOB literals');
      case 'param': {
        this.p++;
        const m = /^\$(\d+)$/.exec(t.text);
        if (!m) unsupported(`named parameter ${t.text}`);
        return { t: 'param', index: Number(m[1]) };
      }
      case 'qparam':
        unsupported('? bind parameters (use $1, $2, …)');
      case 'qid':
        return this.identExpr();
      case 'op':
        if (this.eatOp('(')) {
          if (this.isKw('SELECT') || this.isKw('WITH') || this.isKw('VALUES')) {
            const select = this.select();
            this.op(')');
            return { t: 'subq', select };
          }
          const e = this.expr();
          if (this.isOp(',')) unsupported('row values');
          this.op(')');
          return e;
        }
        return this.err();
      case 'id':
        break;
      default:
        return this.err();
    }
    const u = t.upper;
    if (u === 'NULL') { this.p++; return { t: 'lit', v: null }; }
    if (u === 'TRUE' && !this.isOp('(', this.peek())) { this.p++; return { t: 'lit', v: 1n }; }
    if (u === 'FALSE' && !this.isOp('(', this.peek())) { this.p++; return { t: 'lit', v: 0n }; }
    if (u === 'CURRENT_TIMESTAMP' || u === 'CURRENT_DATE' || u === 'CURRENT_TIME') {
      this.p++;
      const iso = new Date().toISOString();
      return { t: 'lit', v: u === 'CURRENT_DATE' ? iso.slice(0, 10) : u === 'CURRENT_TIME' ? iso.slice(11, 19) : `${iso.slice(0, 10)} ${iso.slice(11, 19)}` };
    }
    if (u === 'CASE') {
      this.p++;
      let operand: AExpr | undefined;
      if (!this.isKw('WHEN')) operand = this.expr();
      const whens: { when: AExpr; then: AExpr }[] = [];
      while (this.eatKw('WHEN')) {
        const when = this.expr();
        this.kw('THEN');
        whens.push({ when, then: this.expr() });
      }
      if (!whens.length) this.err();
      const els = this.eatKw('ELSE') ? this.expr() : undefined;
      this.kw('END');
      return { t: 'case', operand, whens, else: els };
    }
    if (u === 'CAST') {
      this.p++;
      this.op('(');
      const arg = this.expr();
      this.kw('AS');
      const parts: string[] = [];
      while (this.cur.kind === 'id' && !this.isOp(')')) { parts.push(this.cur.text); this.p++; }
      if (this.eatOp('(')) { while (!this.isOp(')')) { if (this.cur.kind === 'eof') this.err(); this.p++; } this.op(')'); }
      this.op(')');
      return { t: 'cast', arg, type: parts.join(' ') };
    }
    if (u === 'EXISTS' && this.isOp('(', this.peek())) {
      this.p += 2;
      const select = this.select();
      this.op(')');
      return { t: 'exists', select, not: false };
    }
    if (u === 'RAISE') unsupported('RAISE');
    if (RESERVED.has(u) && u !== 'LIKE' && u !== 'GLOB') return this.err();
    return this.identExpr();
  }

  private identExpr(): AExpr {
    const first = this.cur;
    this.p++;
    if (this.isOp('(') && first.kind === 'id') {
      this.p++;
      const name = first.text.toLowerCase();
      let distinct = false;
      let star = false;
      const args: AExpr[] = [];
      if (this.eatOp('*')) star = true;
      else if (!this.isOp(')')) {
        distinct = this.eatKw('DISTINCT') ? true : (this.eatKw('ALL'), false);
        do args.push(this.expr()); while (this.eatOp(','));
        if (this.isKw('ORDER')) unsupported('ORDER BY inside an aggregate');
      }
      this.op(')');
      let filter: AExpr | undefined;
      if (this.eatKw('FILTER')) { this.op('('); this.kw('WHERE'); filter = this.expr(); this.op(')'); }
      if (this.eatKw('OVER')) {
        const over = this.isOp('(') ? this.windowSpec() : this.name().toLowerCase();
        return { t: 'fn', name, args, distinct, star, filter, over };
      }
      return { t: 'fn', name, args, distinct, star, filter };
    }
    if (this.eatOp('.')) {
      const second = this.name();
      if (this.eatOp('.')) return { t: 'id', table: `${first.text}.${second}`, name: this.name() };
      return { t: 'id', table: first.text, name: second };
    }
    return { t: 'id', name: first.text };
  }
}
