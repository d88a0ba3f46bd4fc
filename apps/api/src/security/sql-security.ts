/**
 * The SQL spelling of the security catalogue (POST /sql): the same catalogue entries as the
 * routes of users.controller.ts, committed to the tenant's log (actor `user:<acting>`, route
 * `security`), owner only as those routes are.
 *
 *   CREATE {ROLE|USER} [IF NOT EXISTS] name [WITH [MANAGE_TOKENS] [ATTRIBUTES (k = 'v', …)]]
 *   ALTER {ROLE|USER} name WITH [MANAGE_TOKENS | NOMANAGE_TOKENS] [ATTRIBUTES (k = 'v', …)]
 *   DROP {ROLE|USER} [IF EXISTS] name [, …]
 *   GRANT {priv [, …] | ALL [PRIVILEGES]} ON [SCHEMA|TABLE] {schema|*} [, …] TO name [, …]
 *   REVOKE {priv [, …] | ALL [PRIVILEGES]} ON [SCHEMA|TABLE] {schema|*} [, …] FROM name [, …]
 *   CREATE POLICY id ON schema [TO {name|PUBLIC} [, …]] [USING (pred)] [WITH CHECK (pred)]
 *   DROP POLICY [IF EXISTS] id [ON schema]
 *
 * Privileges: READ (or SELECT), INSERT, UPDATE, DELETE, MANAGE; ALL is the five. PUBLIC is every
 * user but the owner (`*`). A script of these statements commits them together (one frame); a
 * script mixing them with other SQL is refused (400), so a catalogue change never half-applies.
 */
import { DbError, type JsonValue } from '@mmdb/core';
import { tokenize, type RawResult } from '@mmdb/sql';
import type { CatalogChange } from '../tenancy/store-port';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { OWNER, PRIVILEGES, USER_NAME, userChange, type Acting, type PolicyRecord, type Privilege, type UserRecord } from './catalog';

type Tok = ReturnType<typeof tokenize>[number];

/** Whether a statement (its first tokens) is one of the security statements. */
function isSecurity(t: readonly Tok[]): boolean {
  const a = t[0]?.kind === 'id' ? t[0].upper : '';
  const b = t[1]?.kind === 'id' ? t[1].upper : '';
  if (a === 'GRANT' || a === 'REVOKE') return true;
  if (a === 'CREATE' || a === 'DROP' || a === 'ALTER') return b === 'ROLE' || b === 'USER' || b === 'POLICY';
  return false;
}

/** A word every security statement holds (GRANT, REVOKE, or CREATE/ALTER/DROP with ROLE, USER or POLICY). */
const SECURITY_WORD = /grant|revoke|role|user|policy/i;

/** The script's statements as token lists (split on top-level `;`), or null when none is a security statement. */
export function securityStatements(sql: string): Tok[][] | null {
  // every security statement holds one of these words (its first or second keyword): a script
  // without any is not one, and is not tokenized here on every request (the plan cache's hit
  // path reads no tokens either)
  if (!SECURITY_WORD.test(sql)) return null;
  let toks: Tok[];
  try {
    toks = tokenize(sql);
  } catch {
    return null; // the SQL engine reports the syntax error
  }
  const stmts: Tok[][] = [[]];
  for (const t of toks) {
    if (t.kind === 'eof') break;
    if (t.kind === 'op' && t.text === ';') stmts.push([]);
    else stmts[stmts.length - 1].push(t);
  }
  const list = stmts.filter((s) => s.length);
  const sec = list.filter(isSecurity);
  if (!sec.length) return null;
  if (sec.length !== list.length) throw new DbError('validation_failed', 'a script may not mix CREATE ROLE / GRANT / REVOKE / CREATE POLICY with other statements: send them on their own');
  return list;
}

class Reader {
  i = 0;
  constructor(readonly sql: string, readonly t: readonly Tok[]) {}
  peek(): string {
    const x = this.t[this.i];
    return x?.kind === 'id' ? x.upper : x?.kind === 'op' ? x.text : '';
  }
  fail(msg: string): never {
    const x = this.t[this.i];
    throw new DbError('validation_failed', `${msg}${x ? ` near "${x.text}"` : ' at the end of the statement'}`);
  }
  eat(word: string): boolean {
    if (this.peek() !== word) return false;
    this.i++;
    return true;
  }
  want(word: string): void {
    if (!this.eat(word)) this.fail(`expected ${word}`);
  }
  /** A name: an identifier, a quoted identifier, or dotted parts (`app.people`), or `*`. */
  name(what: string, star = false): string {
    if (star && this.eat('*')) return '*';
    const parts: string[] = [];
    do {
      const x = this.t[this.i];
      if (!x || (x.kind !== 'id' && x.kind !== 'qid' && x.kind !== 'str')) this.fail(`expected ${what}`);
      parts.push(x.kind === 'id' ? x.text.toLowerCase() : x.text);
      this.i++;
    } while (this.eat('.'));
    return parts.join('.');
  }
  list<T>(item: () => T): T[] {
    const out = [item()];
    while (this.eat(',')) out.push(item());
    return out;
  }
  str(what: string): string {
    const x = this.t[this.i];
    if (x?.kind !== 'str') this.fail(`expected ${what} (a quoted string)`);
    this.i++;
    return x.text;
  }
  /** The source text inside balanced parentheses. */
  paren(what: string): string {
    const open = this.t[this.i];
    this.want('(');
    let depth = 1;
    while (this.i < this.t.length) {
      const x = this.t[this.i++];
      if (x.kind === 'op' && x.text === '(') depth++;
      if (x.kind === 'op' && x.text === ')' && --depth === 0) {
        const text = this.sql.slice(open.end, x.pos).trim();
        if (!text) this.fail(`expected ${what}`);
        return text;
      }
    }
    return this.fail(`unclosed parenthesis in ${what}`);
  }
  end(): void {
    if (this.i < this.t.length) this.fail('unexpected text');
  }
}

function privileges(r: Reader): Privilege[] {
  if (r.eat('ALL')) {
    r.eat('PRIVILEGES');
    return [...PRIVILEGES];
  }
  return r.list(() => {
    const w = r.peek();
    const p = w === 'SELECT' ? 'read' : w.toLowerCase();
    if (!(PRIVILEGES as readonly string[]).includes(p)) r.fail(`expected a privilege (${PRIVILEGES.join(', ')}, SELECT or ALL)`);
    r.i++;
    return p as Privilege;
  });
}

function userOpts(r: Reader, rec: { manage_tokens: boolean; attributes: Record<string, string> }): void {
  if (!r.eat('WITH')) return;
  for (;;) {
    if (r.eat('MANAGE_TOKENS')) rec.manage_tokens = true;
    else if (r.eat('NOMANAGE_TOKENS')) rec.manage_tokens = false;
    else if (r.eat('ATTRIBUTES')) {
      r.want('(');
      r.list(() => {
        const k = r.name('an attribute name');
        r.want('=');
        rec.attributes[k] = r.str(`the value of ${k}`);
      });
      r.want(')');
    } else break;
  }
}

function userName(name: string): string {
  if (!USER_NAME.test(name) || name === OWNER) throw new DbError('validation_failed', `user name must match ${USER_NAME.source} and not be "${OWNER}"`, { field: 'name' });
  return name;
}

/** Runs a script of security statements as one catalogue commit; the answer of each is a `ddl` result. */
export async function runSecuritySql(t: TenantHandle, a: Acting, sql: string, stmts: Tok[][]): Promise<RawResult[]> {
  if (!a.isOwner) throw new DbError('forbidden', `user ${a.name} may not manage users, grants or policies (owner only)`);
  // the statements apply in order to a working copy, then commit together
  const users = new Map<string, UserRecord | null>();
  const policies = new Map<string, PolicyRecord | null>();
  const userOf = (n: string) => (users.has(n) ? users.get(n) ?? undefined : a.catalog.user(n));
  const policyOf = (id: string) => (policies.has(id) ? policies.get(id) ?? undefined : a.catalog.policies.get(id));
  const out: RawResult[] = [];
  const now = Date.now();
  for (const toks of stmts) {
    const r = new Reader(sql, toks);
    const verb = r.peek();
    r.i++;
    if (verb === 'GRANT' || verb === 'REVOKE') {
      const privs = privileges(r);
      r.want('ON');
      if (!r.eat('SCHEMA')) r.eat('TABLE');
      const schemas = r.list(() => r.name('a schema', true));
      r.want(verb === 'GRANT' ? 'TO' : 'FROM');
      const names = r.list(() => r.name('a user'));
      r.end();
      for (const n of names) {
        const u = userOf(n);
        if (!u) throw new DbError('not_found', `no user ${n}`);
        const grants: Record<string, Privilege[]> = Object.fromEntries(Object.entries(u.grants).map(([k, v]) => [k, [...v]]));
        for (const s of schemas) {
          const cur = new Set(grants[s] ?? []);
          for (const p of privs) {
            if (verb === 'GRANT') cur.add(p);
            else cur.delete(p);
          }
          if (cur.size) grants[s] = PRIVILEGES.filter((p) => cur.has(p));
          else delete grants[s];
        }
        users.set(n, { ...u, grants });
      }
      out.push({ kind: 'ddl', statement: verb.toLowerCase() });
      continue;
    }
    const what = r.peek();
    r.i++;
    if (what === 'ROLE' || what === 'USER') {
      if (verb === 'DROP') {
        const ifExists = r.eat('IF') && (r.want('EXISTS'), true);
        const names = r.list(() => r.name('a user'));
        r.end();
        for (const n of names) {
          if (!userOf(n) && !ifExists) throw new DbError('not_found', `no user ${n}`);
          users.set(n, null);
        }
        out.push({ kind: 'ddl', statement: `drop ${what.toLowerCase()}` });
        continue;
      }
      const ifNot = verb === 'CREATE' && r.eat('IF') && (r.want('NOT'), r.want('EXISTS'), true);
      const n = userName(r.name('a user name'));
      const prev = userOf(n);
      if (verb === 'CREATE' && prev && !ifNot) throw new DbError('conflict', `user ${n} already exists`);
      if (verb === 'ALTER' && !prev) throw new DbError('not_found', `no user ${n}`);
      const rec = { manage_tokens: prev?.manage_tokens ?? false, attributes: { ...(prev?.attributes ?? {}) } };
      userOpts(r, rec);
      r.end();
      if (!(verb === 'CREATE' && prev)) users.set(n, { grants: prev?.grants ?? {}, attributes: rec.attributes, manage_tokens: rec.manage_tokens, created: prev?.created ?? now });
      out.push({ kind: 'ddl', statement: `${verb.toLowerCase()} ${what.toLowerCase()}`, created: verb === 'CREATE' && !prev });
      continue;
    }
    // POLICY
    if (verb === 'ALTER') r.fail('ALTER POLICY is not supported: CREATE POLICY replaces one by its id');
    if (verb === 'DROP') {
      const ifExists = r.eat('IF') && (r.want('EXISTS'), true);
      const id = r.name('a policy id');
      if (r.eat('ON')) r.name('a schema');
      r.end();
      if (!policyOf(id) && !ifExists) throw new DbError('not_found', `no policy ${id}`);
      policies.set(id, null);
      out.push({ kind: 'ddl', statement: 'drop policy' });
      continue;
    }
    const id = r.name('a policy id');
    r.want('ON');
    if (!r.eat('SCHEMA')) r.eat('TABLE');
    const schema = r.name('a schema');
    let to: string[] = ['*'];
    let using: string | undefined;
    let check: string | undefined;
    if (r.eat('TO')) to = r.list(() => (r.eat('PUBLIC') ? '*' : r.name('a user')));
    if (r.eat('USING')) using = r.paren('a USING predicate');
    if (r.eat('WITH')) {
      r.want('CHECK');
      check = r.paren('a WITH CHECK predicate');
    }
    r.end();
    if (using === undefined && check === undefined) r.fail('CREATE POLICY needs USING (…) or WITH CHECK (…)');
    policies.set(id, { schema, users: to, ...(using !== undefined ? { using } : {}), ...(check !== undefined ? { check } : {}) });
    out.push({ kind: 'ddl', statement: 'create policy', schema });
  }
  const changes: CatalogChange[] = [
    ...[...users].map(([n, rec]) => userChange(n, rec)),
    ...[...policies].map(([id, rec]): CatalogChange => ({ op: 'catalog', kind: 'policy', id, record: rec as unknown as JsonValue })),
  ];
  if (changes.length) await t.commit({ changes, actor: `user:${a.name}`, route: 'security' });
  return out;
}
