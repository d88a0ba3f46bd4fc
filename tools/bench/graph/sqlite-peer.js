// The SQLite peer: the same edges in better-sqlite3, traversals as recursive CTEs.
'use strict';
const Database = require('better-sqlite3');

class SqlitePeer {
  constructor(edges) {
    this.db = new Database(':memory:');
    this.db.pragma('journal_mode = OFF');
    this.db.exec('CREATE TABLE edges (src TEXT NOT NULL, dst TEXT NOT NULL, w REAL NOT NULL, PRIMARY KEY (src, dst)) WITHOUT ROWID');
    const ins = this.db.prepare('INSERT OR IGNORE INTO edges VALUES (?, ?, ?)');
    this.db.transaction((es) => {
      for (const [a, b, w] of es) ins.run(a, b, w);
    })(edges);
    this.db.exec('ANALYZE');
    this.qNeighbors = this.db.prepare('SELECT dst FROM edges WHERE src = ?').pluck();
    // BFS to depth N: a recursive CTE over (node, depth); UNION drops repeated pairs,
    // the outer query keeps each node at its least depth.
    this.qBfs = this.db.prepare(`
      WITH RECURSIVE walk(node, depth) AS (
        SELECT @src, 0
        UNION
        SELECT e.dst, w.depth + 1 FROM walk w JOIN edges e ON e.src = w.node WHERE w.depth < @depth
      )
      SELECT node, MIN(depth) AS depth FROM walk GROUP BY node ORDER BY depth`);
    this.qOut = this.db.prepare('SELECT dst, w FROM edges WHERE src = ?').raw();
  }

  neighbors(node) {
    return this.qNeighbors.all(node);
  }

  bfs(src, depth) {
    return this.qBfs.all({ src, depth });
  }

  /** Dijkstra in the application over one indexed SELECT per settled node (SQL has no priority queue). */
  dijkstra(src, dst) {
    const dist = new Map([[src, 0]]);
    const done = new Set();
    const heap = [[0, src]];
    while (heap.length) {
      const [d, u] = popMin(heap);
      if (done.has(u)) continue;
      done.add(u);
      if (u === dst) return d;
      for (const [v, w] of this.qOut.all(u)) {
        const nd = d + w;
        const old = dist.get(v);
        if (old === undefined || nd < old) {
          dist.set(v, nd);
          pushHeap(heap, [nd, v]);
        }
      }
    }
    return null;
  }

  close() {
    this.db.close();
  }
}

function pushHeap(h, x) {
  h.push(x);
  let i = h.length - 1;
  while (i > 0) {
    const p = (i - 1) >> 1;
    if (h[p][0] <= h[i][0]) break;
    [h[p], h[i]] = [h[i], h[p]];
    i = p;
  }
}

function popMin(h) {
  const top = h[0];
  const last = h.pop();
  if (h.length) {
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && h[l][0] < h[m][0]) m = l;
      if (r < h.length && h[r][0] < h[m][0]) m = r;
      if (m === i) break;
      [h[m], h[i]] = [h[i], h[m]];
      i = m;
    }
  }
  return top;
}

module.exports = { SqlitePeer };
