/** Statements other than the driver's own (BEGIN/COMMIT): SELECT, DML through plans, DDL into manifests. */
import { DbError, isInternalTable, reservedTableName, type JsonValue, type TableManifest } from '@mmdb/core';
import type { Change } from '@mmdb/storage';
import type { Expr, PlanNode } from '@mmdb/plan';
import type { ResultCol, Select, Stmt } from './front/ast';
import { Binder } from './front/binder';
import { findManifest, sqlTable, userManifests } from './catalog';
import { createTableToml, manifestToml } from './ddl';
import { fromJson, toJson, tupleKey, type Value } from './values';
import type { QueryOptions, RawResult, Running } from './run/executor';
import type { Txn } from './run/writer';
import type { SqlEngine } from './engine';
import { outKind, type OutKind } from './column-codec';

export async function runStatement(e: SqlEngine, st: Stmt, params: Value[], txn: Txn, opts: QueryOptions, running: Running): Promise<RawResult> {
  switch (st.kind) {
    case 'select': {
      if (!opts.cacheKey || txn.overlay.size > 0) {
        const b = e.bind(st);
        return e.exec.query(b.plan, b.names, params, txn, opts, running);
      }
      const p = e.prepare(st, opts.policy);
      e.planCache.set(opts.cacheKey, p);
      return e.exec.query(p.plan, p.names, params, txn, opts, running, p);
    }
    case 'insert': {
      const m = requireTable(e, st.table);
      const t = sqlTable(e.store, m);
      const b = new Binder(e.catalog()).bindSelect(st.source, null);
      const visible = t.columns.filter((c) => !c.hidden).map((c) => c.name);
      const columns = st.columns ?? visible;
      for (const c of columns) if (!t.columns.some((x) => x.name.toLowerCase() === c.toLowerCase())) throw new DbError('validation_failed', `table ${m.table} has no column named ${c}`, { column: c });
      if (b.names.length !== columns.length) {
        throw new DbError('validation_failed', `table ${m.table} has ${columns.length} columns but ${b.names.length} values were supplied`);
      }
      if (st.orConflict === 'ignore') throw new DbError('unsupported_sql', 'INSERT OR IGNORE is not supported', { construct: 'INSERT OR IGNORE' });
      const returning = st.returning ? returningCols(e, st.returning, m) : undefined;
      const plan: PlanNode = {
        op: 'insert', schema: m.id, columns, input: b.plan,
        on_conflict: st.orConflict === 'replace' ? 'replace' : 'error',
        ...(returning ? { returning } : {}),
      };
      const before = txn.changes.length;
      const r = await e.exec.query(plan, returning?.map((x) => x.name) ?? [], params, txn, opts, running);
      const rows = txn.changes.slice(before).filter((c): c is Extract<Change, { op: 'put' }> => c.op === 'put').map((c) => c.row);
      return { kind: 'insert', schema: m.id, rows, names: r.kind === 'select' ? r.names : [], returning: r.kind === 'select' ? r.rows : [], kinds: returningKinds(e, returning, m) };
    }
    case 'update': {
      const m = requireTable(e, st.table);
      const alias = st.alias ?? m.table;
      const sel: Select = { kind: 'select', body: { t: 'core', distinct: false, columns: [{ t: 'star' }], from: { t: 'table', name: st.table, alias }, where: st.where } };
      const binder = new Binder(e.catalog());
      const b = binder.bindSelect(sel, null);
      const filterInput = (b.plan as { input: PlanNode }).input; // project(*) → its input: scan or filter
      const scope = { items: [{ alias, internal: alias, cols: sqlTable(e.store, m).columns.map((c) => ({ ...c })) }], parent: null, ctes: new Map() };
      const set = st.sets.map((s) => ({ column: s.column, expr: binder.expr(s.expr, scope as never, null) }));
      const returning = st.returning ? returningCols(e, st.returning, m) : undefined;
      const plan: PlanNode = { op: 'update', schema: m.id, alias, input: filterInput, set, ...(returning ? { returning } : {}) };
      const before = txn.changes.length;
      const r = await e.exec.query(plan, returning?.map((x) => x.name) ?? [], params, txn, opts, running);
      const count = txn.changes.slice(before).filter((c) => c.op === 'put').length;
      return { kind: 'update', schema: m.id, count, names: r.kind === 'select' ? r.names : [], returning: r.kind === 'select' ? r.rows : [], kinds: returningKinds(e, returning, m) };
    }
    case 'delete': {
      const m = requireTable(e, st.table);
      const alias = st.alias ?? m.table;
      const sel: Select = { kind: 'select', body: { t: 'core', distinct: false, columns: [{ t: 'star' }], from: { t: 'table', name: st.table, alias }, where: st.where } };
      const b = new Binder(e.catalog()).bindSelect(sel, null);
      const plan: PlanNode = { op: 'delete', schema: m.id, alias, input: (b.plan as { input: PlanNode }).input };
      const mode = opts.deleteMode ?? 'translate';
      const before = txn.changes.length;
      await e.exec.query(plan, [], params, txn, opts, running);
      const dels = txn.changes.splice(before).filter((c): c is Extract<Change, { op: 'delete' }> => c.op === 'delete');
      if (mode === 'execute') txn.changes.push(...dels);
      else for (const d of dels) txn.overlay.get(m.id)?.delete(pkKey(d.pk));
      return { kind: 'delete', schema: m.id, pks: dels.map((d) => d.pk), translated: mode !== 'execute' };
    }
    case 'create_table': {
      const existing = findManifest(e.store, st.name);
      if (existing || e.views.has(st.name.toLowerCase())) {
        if (st.ifNotExists) return { kind: 'ddl', statement: 'create_table', schema: existing?.id, created: false };
        throw new DbError('conflict', `table ${st.name} already exists`, { schema: st.name });
      }
      if (st.asSelect) throw new DbError('unsupported_sql', 'CREATE TABLE … AS SELECT is not supported', { construct: 'CREATE TABLE AS' });
      if (isInternalTable(st.name)) throw reservedTableName(st.name);
      requireNoTxn(txn, 'CREATE TABLE');
      const toml = createTableToml(st, e.store, (c) => e.constant(c.default!));
      const r = await e.store.registerSchema(toml);
      return { kind: 'ddl', statement: 'create_table', schema: r.id, created: r.created };
    }
    case 'create_index': {
      const m = requireTable(e, st.table);
      requireNoTxn(txn, 'CREATE INDEX');
      const all = userManifests(e.store).flatMap((x) => x.indexes.map((i) => i.name.toLowerCase()));
      if (all.includes(st.name.toLowerCase())) {
        if (st.ifNotExists) return { kind: 'ddl', statement: 'create_index', schema: m.id, created: false };
        throw new DbError('conflict', `index ${st.name} already exists`);
      }
      const cols = st.columns.map((c) => {
        const col = m.columns.find((x) => x.name.toLowerCase() === c.toLowerCase());
        if (!col) throw new DbError('validation_failed', `no such column: ${c}`, { column: c });
        return col.name;
      });
      if (st.using && st.using !== 'btree') return vectorIndex(e, m, st, cols, opts);
      // Built online by a migration (the shadow builds it; a unique one that finds duplicates fails naming them) where the app installed one.
      if (e.schemaChanger) await e.schemaChanger({ schema: m.id, operations: [{ op: 'add_index', name: st.name, columns: cols, unique: st.unique }] }, opts);
      else await e.store.registerSchema(manifestToml(e.store, m, (d) => d.indexes!.push({ name: st.name, columns: cols, unique: st.unique })));
      return { kind: 'ddl', statement: 'create_index', schema: m.id, created: true };
    }
    case 'create_view': {
      if (findManifest(e.store, st.name) || e.views.has(st.name.toLowerCase())) {
        if (st.ifNotExists) return { kind: 'ddl', statement: 'create_view', created: false };
        throw new DbError('conflict', `view ${st.name} already exists`);
      }
      new Binder(e.catalog()).bindSelect(st.select, null);
      e.views.set(st.name.toLowerCase(), st.select);
      return { kind: 'ddl', statement: 'create_view', created: true };
    }
    case 'drop': {
      requireNoTxn(txn, 'DROP');
      if (st.what === 'table') {
        const m = findManifest(e.store, st.name);
        if (!m) {
          if (st.ifExists) return { kind: 'ddl', statement: 'drop_table' };
          throw new DbError('schema_not_found', `no such table: ${st.name}`, { schema: st.name });
        }
        await e.store.dropSchema(m.id);
        return { kind: 'ddl', statement: 'drop_table', schema: m.id };
      }
      if (st.what === 'view') {
        if (!e.views.delete(st.name.toLowerCase()) && !st.ifExists) throw new DbError('not_found', `no such view: ${st.name}`);
        return { kind: 'ddl', statement: 'drop_view' };
      }
      if (st.what === 'index') {
        const m = userManifests(e.store).find((x) => x.indexes.some((i) => i.name.toLowerCase() === st.name.toLowerCase()));
        if (!m) {
          if (st.ifExists) return { kind: 'ddl', statement: 'drop_index' };
          throw new DbError('not_found', `no such index: ${st.name}`);
        }
        const name = m.indexes.find((i) => i.name.toLowerCase() === st.name.toLowerCase())!.name;
        if (e.schemaChanger) await e.schemaChanger({ schema: m.id, operations: [{ op: 'drop_index', name }] }, opts);
        else await e.store.registerSchema(manifestToml(e.store, m, (d) => { d.indexes = d.indexes!.filter((i) => i.name !== name); }));
        return { kind: 'ddl', statement: 'drop_index', schema: m.id };
      }
      throw new DbError('unsupported_sql', 'triggers are not supported', { construct: 'DROP TRIGGER' });
    }
    case 'alter_add': {
      const m = requireTable(e, st.table);
      requireNoTxn(txn, 'ALTER TABLE');
      const c = st.column;
      if (c.pk || c.unique) throw new DbError('validation_failed', 'Cannot add a PRIMARY KEY or UNIQUE column');
      const { columnType } = await import('./ddl');
      const col = { name: c.name, ty: columnType(c.type), description: `sql:${c.type}`, ...(c.default ? { default: toJson(e.constant(c.default)) } : {}) };
      if (m.columns.some((x) => x.name.toLowerCase() === c.name.toLowerCase())) throw new DbError('validation_failed', `duplicate column name: ${c.name}`, { column: c.name });
      // Online (a migration) where the app installed one; else one schema frame.
      if (e.schemaChanger) await e.schemaChanger({ schema: m.id, operations: [{ op: 'add_column', ...col } as JsonValue] }, opts);
      else await e.store.registerSchema(manifestToml(e.store, m, (d) => d.columns.push(col)));
      return { kind: 'ddl', statement: 'alter_table', schema: m.id };
    }
    case 'alter_rename':
    case 'alter_drop': {
      const m = requireTable(e, st.table);
      requireNoTxn(txn, 'ALTER TABLE');
      const col = (n: string) => m.columns.find((c) => c.name.toLowerCase() === n.toLowerCase());
      const name = st.kind === 'alter_rename' ? st.from : st.column;
      const c = col(name);
      if (!c) throw new DbError('validation_failed', `no such column: "${name}"`, { column: name });
      if (st.kind === 'alter_rename' && col(st.to)) throw new DbError('validation_failed', `duplicate column name: ${st.to}`, { column: st.to });
      // Every row is rewritten: only an online migration does that (the app installs it).
      if (!e.schemaChanger) throw new DbError('unsupported_sql', `ALTER TABLE ${st.kind === 'alter_rename' ? 'RENAME' : 'DROP'} COLUMN needs online migrations (the server's)`, { construct: 'ALTER TABLE' });
      const operations = st.kind === 'alter_rename' ? [{ op: 'rename_column', from: c.name, to: st.to }] : [{ op: 'drop_column', name: c.name }];
      await e.schemaChanger({ schema: m.id, operations }, opts);
      return { kind: 'ddl', statement: 'alter_table', schema: m.id };
    }
    case 'reindex': {
      // indexes are maintained in the commit itself: REINDEX only checks the name
      const n = st.name?.toLowerCase();
      if (n && !findManifest(e.store, n) && !userManifests(e.store).some((m) => m.indexes.some((i) => i.name.toLowerCase() === n))) {
        throw new DbError('validation_failed', `unable to identify the object to be reindexed: ${st.name}`);
      }
      return { kind: 'ddl', statement: 'reindex' };
    }
    case 'unsupported':
      throw new DbError('unsupported_sql', `${st.construct} is not supported`, { construct: st.construct });
    default:
      throw new DbError('unsupported_sql', `statement ${(st as Stmt).kind} is not supported here`);
  }
}

function requireNoTxn(txn: Txn, what: string): void {
  if (txn.explicit) throw new DbError('unsupported_sql', `${what} inside BEGIN … COMMIT is not supported`, { construct: what });
}

function requireTable(e: SqlEngine, name: string): TableManifest {
  const m = findManifest(e.store, name);
  if (!m) throw new DbError('validation_failed', `no such table: ${name}`, { table: name });
  return m;
}

function returningCols(e: SqlEngine, cols: ResultCol[], m: TableManifest): { name: string; expr: Expr }[] {
  const t = sqlTable(e.store, m);
  const binder = new Binder(e.catalog());
  const scope = { items: [{ alias: m.table, internal: '', cols: t.columns.map((c) => ({ ...c })) }], parent: null, ctes: new Map() };
  const out: { name: string; expr: Expr }[] = [];
  for (const rc of cols) {
    if (rc.t === 'star') {
      for (const c of t.columns) if (!c.hidden) out.push({ name: c.name, expr: { kind: 'col', name: c.name } });
    } else {
      const e = binder.expr(rc.expr, scope as never, null);
      out.push({ name: rc.alias ?? (rc.expr.t === 'id' ? rc.expr.name : rc.text), expr: stripDot(e) });
    }
  }
  return out;
}

/** json/vector kinds of RETURNING columns that name such a column (column-codec.ts). */
function returningKinds(e: SqlEngine, returning: { name: string; expr: Expr }[] | undefined, m: TableManifest): OutKind[] | undefined {
  if (!returning) return undefined;
  const t = sqlTable(e.store, m);
  return returning.map((r) => {
    const i = r.expr.kind === 'col' ? m.columns.findIndex((c) => c.name === (r.expr as { name: string }).name) : -1;
    return i >= 0 ? outKind(t, i) : undefined;
  });
}

const OPCLASS_METRIC: Record<string, string> = { vector_l2_ops: 'l2', vector_cosine_ops: 'cosine', vector_ip_ops: 'dot', vector_l1_ops: 'manhattan' };

/**
 * pgvector's `CREATE INDEX … USING hnsw | ivfflat (col vector_l2_ops | vector_cosine_ops |
 * vector_ip_ops | vector_l1_ops) [WITH (m = …, ef_construction = …, lists = …)]`: the table's
 * `[vector]` section (its metric locked by the operator class; default l2), then the rows already
 * stored are written again in batches so their vectors enter the index.
 */
async function vectorIndex(e: SqlEngine, m: TableManifest, st: Extract<Stmt, { kind: 'create_index' }>, cols: string[], opts: QueryOptions): Promise<RawResult> {
  if (st.using !== 'hnsw' && st.using !== 'ivfflat') throw new DbError('unsupported_sql', `index method ${st.using} is not supported (hnsw, ivfflat, btree)`, { construct: `USING ${st.using}` });
  const col = m.columns.find((c) => c.name === cols[0]);
  if (cols.length !== 1 || col?.ty !== 'vector' || !col.dim) throw new DbError('validation_failed', `USING ${st.using} indexes one VECTOR(n) column`, { column: cols[0] });
  const metric = st.opclass ? OPCLASS_METRIC[st.opclass] : 'l2';
  if (!metric) throw new DbError('validation_failed', `operator class ${st.opclass} is not one of ${Object.keys(OPCLASS_METRIC).join(', ')}`, { opclass: st.opclass });
  if (m.vector) {
    if (st.ifNotExists) return { kind: 'ddl', statement: 'create_index', schema: m.id, created: false };
    throw new DbError('conflict', `table ${m.id} already has a vector index (on ${m.vector.column})`);
  }
  const w = st.with ?? {};
  const params: Record<string, number> = {};
  if (w.m !== undefined) params.m = w.m;
  if (w.ef_construction !== undefined) params.ef_construction = w.ef_construction;
  if (w.lists !== undefined) params.nlist = w.lists;
  const vector = { column: col.name, dim: col.dim!, metric, index: st.using === 'hnsw' ? 'hnsw' : 'auto', ...(Object.keys(params).length ? { params } : {}) };
  // Online: a migration's shadow builds the entries and the index as it fills; the cutover switches to them.
  if (e.schemaChanger) {
    await e.schemaChanger({ schema: m.id, operations: [{ op: 'add_vector', def: vector }] }, opts);
    return { kind: 'ddl', statement: 'create_index', schema: m.id, created: true };
  }
  await e.store.registerSchema(manifestToml(e.store, m, (d) => {
    d.vector = vector;
  }));
  // rows stored before the index: written again (same values) so their vectors are indexed
  const snap = e.store.snapshot();
  try {
    for await (const batch of snap.scanRows(m.id, { batchSize: 1000 })) {
      const changes = batch.filter((r) => r.values[col.name] != null).map((r) => ({ op: 'put' as const, schema: m.id, row: r.values }));
      if (changes.length) await e.store.commit({ changes });
    }
  } finally {
    await snap.release();
  }
  return { kind: 'ddl', statement: 'create_index', schema: m.id, created: true };
}

function pkKey(pk: readonly unknown[]): string {
  return tupleKey(pk.map((v) => fromJson(v as never, undefined)));
}

/** An expression bound in a one-table scope, its `.col` names made plain. */
export function stripDot(e: Expr): Expr {
  return JSON.parse(JSON.stringify(e), (k, v) => (k === 'name' && typeof v === 'string' && v.startsWith('.') ? v.slice(1) : v));
}
