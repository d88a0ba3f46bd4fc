// In-process target: GraphIndex over a real TenantStore (classic-level in a temp dir),
// the edges loaded as rows of an edge table through the store's row API.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');

const MANIFESTS = [
  `namespace = "bench"
table = "nodes"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "str"
required = true
`,
  `namespace = "bench"
table = "edges"
primary_key = ["src", "dst"]
[[columns]]
name = "src"
ty = "str"
required = true
[[columns]]
name = "dst"
ty = "str"
required = true
[[columns]]
name = "w"
ty = "f64"
[[relations]]
name = "link"
source = "bench.nodes"
source_columns = ["src"]
target = "bench.nodes"
columns = ["dst"]
weight = "w"
`,
];

function storeTarget({ syntheticThroughStore }) {
  return {
    async prepare(name, edges) {
      if (!syntheticThroughStore && edges.length > 100_000) return null;
      const storage = require('@mmdb/storage');
      const graph = require('@mmdb/graph');
      if (typeof storage.TenantStore !== 'function') {
        console.log('(store target skipped: @mmdb/storage has no TenantStore)');
        return null;
      }
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'graph-bench-'));
      const g = new graph.GraphIndex();
      const store = await storage.TenantStore.open({ dir, participants: [g], sync: false });
      for (const m of MANIFESTS) await store.registerSchema(m);
      const t0 = Date.now();
      const B = 2000;
      for (let i = 0; i < edges.length; i += B) {
        const changes = edges.slice(i, i + B).map(([src, dst, w]) => ({ op: 'put', schema: 'bench.edges', row: { src, dst, w } }));
        await store.commit({ changes });
      }
      const tLoad = Date.now() - t0;
      const t1 = Date.now();
      await g.neighbors('bench.edges', 'link', edges[0][0]); // builds the adjacency from the E keys
      await new Promise((r) => setTimeout(r, 2000)); // let background compaction settle
      console.log(`${name}: store load ${tLoad} ms (${edges.length} rows), adjacency build from store ${Date.now() - t1} ms`);
      return {
        label: 'in-process GraphIndex+store',
        neighbors: (n) => g.neighbors('bench.edges', 'link', n),
        bfs: (n, d) => g.bfs('bench.edges', 'link', n, d),
        dijkstra: (s, t) => g.dijkstra('bench.edges', 'link', s, t),
        async close() {
          await store.close();
          fs.rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  };
}

module.exports = { storeTarget, MANIFESTS };
