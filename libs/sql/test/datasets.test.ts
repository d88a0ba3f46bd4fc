/**
 * Each multi-model node's answer equals the matching reader's (what the routes answered before
 * they became plans) on the shared datasets: Cranfield (BM25), MNIST (vector top-k), ca-GrQc
 * (BFS, path, Dijkstra): same ids, scores, distances, depths.
 */
import * as fs from 'fs';
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join, resolve } from 'path';
import { TenantStore } from '@mmdb/storage';
import { FtsParticipant } from '@mmdb/fts';
import { readFvecs, VectorParticipant } from '@mmdb/vector';
import { GraphIndex } from '@mmdb/graph';
import type { PlanNode } from '@mmdb/plan';
import { SqlEngine, formatResult } from '@mmdb/sql';

const DATA = resolve(__dirname, '../../../../shared/datasets');
const lit = (value: unknown) => ({ kind: 'lit', value }) as never;

let dir: string;
let store: TenantStore;
let sql: SqlEngine;
const fts = new FtsParticipant();
const vector = new VectorParticipant();
const graph = new GraphIndex();

const EDGES = `
namespace = "grqc"
table = "edges"
primary_key = ["src", "dst"]
[[columns]]
name = "src"
ty = "i64"
required = true
[[columns]]
name = "dst"
ty = "i64"
required = true
[[columns]]
name = "w"
ty = "f64"
[[relations]]
name = "coauthor"
source = "grqc.authors"
source_columns = ["src"]
target = "grqc.authors"
columns = ["dst"]
weight = "w"
`;
const AUTHORS = `
namespace = "grqc"
table = "authors"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
`;

async function rows(p: PlanNode): Promise<Record<string, unknown>[]> {
  return (formatResult(await sql.runPlan(p)) as { rows: Record<string, unknown>[] }).rows;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sql-datasets-'));
  store = await TenantStore.open({ dir, sync: false, participants: [fts, vector, graph] });
  graph.attach(store);
  sql = new SqlEngine(store, undefined, { sources: { fts, vector, graph } });
  // Cranfield as a standalone full-text table
  const docs = fs.readFileSync(join(DATA, 'cranfield/docs.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { id: string; text: string });
  for (let i = 0; i < docs.length; i += 200) await store.commit({ changes: docs.slice(i, i + 200).map((d) => FtsParticipant.putDoc('cran', 'text', d.id, d.text)) });
  // the first 3,000 MNIST vectors as a standalone vector table (HNSW past 2,000)
  const base = readFvecs(join(DATA, 'mnist/base.fvecs'), 3000);
  for (let i = 0; i < base.n; i += 500) {
    const changes = [];
    for (let j = i; j < Math.min(base.n, i + 500); j++) changes.push(VectorParticipant.put('mnist', { id: `m${j}`, embedding: Array.from(base.data.subarray(j * base.dim, (j + 1) * base.dim)), metadata: { even: j % 2 === 0 }, metric: 'l2' }));
    await store.commit({ changes });
  }
  // ca-GrQc as an edge table
  await store.registerSchema(AUTHORS);
  await store.registerSchema(EDGES);
  const edges = fs.readFileSync(join(DATA, 'graph/CA-GrQc.txt'), 'utf8').trim().split('\n').slice(1).map((l) => l.trim().split('\t').map(Number));
  for (let i = 0; i < edges.length; i += 2000) {
    await store.commit({ changes: edges.slice(i, i + 2000).map(([a, b]) => ({ op: 'put', schema: 'grqc.edges', row: { src: a, dst: b, w: ((a * 31 + b * 17) % 9) + 1 } })) });
  }
}, 120_000);

afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('nodes equal the readers on the shared datasets', () => {
  it('Cranfield: fts_search over the implicit table = the fts search (ids and scores), default and reranked', async () => {
    const queries = fs.readFileSync(join(DATA, 'cranfield/queries.tsv'), 'utf8').trim().split('\n').slice(1, 21).map((l) => l.split('\t')[2]);
    for (const q of queries) {
      const want = await fts.search('cran', 'text', q, 10);
      const got = await rows({ op: 'fts_search', schema: 'cran', field: 'text', query: q, limit: 10 });
      expect(got.map((r) => [r.doc_id, r._score])).toEqual(want.map((d) => [d.doc_id, d.score]));
      // the same options on both sides: the opt-in reranked ranking (proximity + RM3)
      const wantR = await fts.search('cran', 'text', q, 10, { feedback: 'rm3', proximity: 'bm25tp' });
      const gotR = await rows({ op: 'fts_search', schema: 'cran', field: 'text', query: q, limit: 10, ranking: { feedback: 'rm3', proximity: 'bm25tp' } });
      expect(gotR.map((r) => [r.doc_id, r._score])).toEqual(wantR.map((d) => [d.doc_id, d.score]));
    }
  });

  it('MNIST: vector_topk = the vector top-k (ids, distances, metadata filter)', async () => {
    const qs = readFvecs(join(DATA, 'mnist/query.fvecs'), 10);
    for (let i = 0; i < qs.n; i++) {
      const q = Array.from(qs.data.subarray(i * qs.dim, (i + 1) * qs.dim));
      const want = vector.topk('mnist', { vector: q, k: 10 });
      const got = await rows({ op: 'vector_topk', schema: 'mnist', vector: lit(q), k: 10 });
      expect(got.map((r) => [r.id, r._distance])).toEqual(want.map((m) => [m.id, m.distance]));
      const wantEven = vector.topk('mnist', { vector: q, k: 5, filter: { even: true } });
      const gotEven = await rows({ op: 'vector_topk', schema: 'mnist', vector: lit(q), k: 5, metadata: { even: true } });
      expect(gotEven.map((r) => r.id)).toEqual(wantEven.map((m) => m.id));
      const meta = (v: unknown) => (typeof v === 'string' ? JSON.parse(v) : v) as { even: boolean };
      expect(gotEven.every((r) => meta(r.metadata).even === true)).toBe(true);
    }
  });

  it('ca-GrQc: graph_expand = bfs (nodes, depths, order); graph_path and graph_dijkstra = path and dijkstra', async () => {
    for (const src of ['3466', '10310', '5052', '21508', '9572']) {
      const want = await graph.bfs('grqc.authors', 'coauthor', src, 3);
      const got = await rows({ op: 'graph_expand', schema: 'grqc.authors', rel: 'coauthor', from: lit(src), min_depth: 0, max_depth: 3, row_columns: false });
      expect(got.map((r) => [r._node, r._depth])).toEqual(want.map((v) => [v.node, v.depth]));
      const dst = want[want.length - 1].node;
      const p = await graph.path('grqc.authors', 'coauthor', src, dst, 6);
      expect((await rows({ op: 'graph_path', schema: 'grqc.authors', rel: 'coauthor', src: lit(src), dst: lit(dst), max_depth: 6, row_columns: false })).map((r) => r._node)).toEqual(p.path);
      const d = await graph.dijkstra('grqc.authors', 'coauthor', src, dst);
      const gd = await rows({ op: 'graph_dijkstra', schema: 'grqc.authors', rel: 'coauthor', src: lit(src), dst: lit(dst), row_columns: false });
      expect(gd.map((r) => r._node)).toEqual(d.path);
      expect(gd[gd.length - 1]?._cost ?? null).toBe(d.total_weight);
    }
  });
});
