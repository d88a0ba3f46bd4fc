/** A small test domain (sailors, ships, a self-relation), as manifests and rows, for the unit specs. */
import type { ColumnDef, TableManifest } from '@mmdb/core';
import type { ValueSource } from '../lexicon';

const col = (name: string, ty: ColumnDef['ty'], required = true): ColumnDef => ({ name, ty, required });
const base = { indexes: [], checks: [], fulltext: [], foreign_keys: [], relations: [] };

export const FLEET: TableManifest[] = [
  { ...base, namespace: 'fleet', table: 'sailors', id: 'fleet.sailors', primary_key: ['id'], label: 'name',
    columns: [col('id', 'i64'), col('name', 'str'), col('home_port', 'str'), col('born_year', 'i64'), col('joined_on', 'str'), col('died_in', 'i64', false)] },
  { ...base, namespace: 'fleet', table: 'ships', id: 'fleet.ships', primary_key: ['id'], label: 'name',
    columns: [col('id', 'i64'), col('name', 'str'), { ...col('tonnage', 'f64'), synonyms: ['weight'], description: 'displacement in metric tons' }, col('captain_id', 'i64'), col('log', 'str', false)],
    fulltext: [{ field: 'log', analyzer: 'porter', k1: 1.2, b: 0.75 }],
    foreign_keys: [{ name: 'fk_captain', columns: ['captain_id'], references: 'fleet.sailors', ref_columns: ['id'], on_delete: 'restrict' }],
    relations: [{ name: 'captained_by', source: 'fleet.ships', target: 'fleet.sailors', columns: ['captain_id'], forward: 'ship -> its captain', reverse: 'sailor -> ships they command' }] },
  { ...base, namespace: 'fleet', table: 'mentoring', id: 'fleet.mentoring', primary_key: ['mentor_id', 'mentee_id'],
    columns: [col('mentor_id', 'i64'), col('mentee_id', 'i64')],
    relations: [{ name: 'mentors', source: 'fleet.sailors', source_columns: ['mentor_id'], target: 'fleet.sailors', columns: ['mentee_id'], forward: 'sailor -> sailors they mentor', reverse: 'sailor -> their mentors' }] },
  { ...base, namespace: 'fleet', table: 'crossings', id: 'fleet.crossings', primary_key: ['id'],
    columns: [col('id', 'i64'), col('ship_id', 'i64'), col('sailed_on', 'str'), col('due_on', 'str'), col('arrived_on', 'str', false)],
    foreign_keys: [{ name: 'fk_ship', columns: ['ship_id'], references: 'fleet.ships', ref_columns: ['id'], on_delete: 'restrict' }] },
];

export const ROWS: Record<string, Array<Record<string, unknown>>> = {
  'fleet.sailors': [
    { id: 1, name: 'Ada Byrne', home_port: 'Oslo', born_year: 1950, joined_on: '2001-03-04' },
    { id: 2, name: 'Bo Lund', home_port: 'Bergen', born_year: 1962, joined_on: '2010-07-01' },
  ],
  'fleet.ships': [{ id: 1, name: 'Sea Hawk', tonnage: 5200, captain_id: 1, log: 'Storm damage to the mast.' }],
  'fleet.mentoring': [{ mentor_id: 1, mentee_id: 2 }],
  'fleet.crossings': [{ id: 1, ship_id: 1, sailed_on: '2020-05-01', due_on: '2020-05-09', arrived_on: '2020-05-11' }],
};

export const values: ValueSource = async (table, columns, limit) =>
  new Map(columns.map((c) => {
    const s = new Set((ROWS[table] ?? []).map((r) => r[c]).filter((v): v is string => typeof v === 'string'));
    return [c, s.size > limit ? null : [...s]];
  }));
