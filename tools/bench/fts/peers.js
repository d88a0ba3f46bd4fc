// The peers measured beside our BM25: SQLite FTS5 (porter tokenizer, bm25()) and MiniSearch.
'use strict';
const Database = require('better-sqlite3');
const MiniSearch = require('minisearch');

/** Plain words of a query: every system gets the same bag of words. */
const words = (text) => text.match(/[\p{L}\p{N}]+/gu) || [];

class Fts5 {
  constructor(file) {
    this.db = new Database(file || ':memory:');
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.exec(`CREATE VIRTUAL TABLE docs USING fts5(doc_id UNINDEXED, body, tokenize = 'porter unicode61')`);
    this.ins = this.db.prepare('INSERT INTO docs(doc_id, body) VALUES (?, ?)');
    this.q = this.db.prepare('SELECT doc_id FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?');
  }
  /** One durable transaction per batch. */
  insertBatch(docs) {
    this.db.transaction((ds) => {
      for (const d of ds) this.ins.run(d.id, d.body);
    })(docs);
  }
  search(text, limit) {
    const w = words(text);
    if (!w.length) return [];
    return this.q.all(w.map((x) => `"${x}"`).join(' OR '), limit).map((r) => r.doc_id);
  }
  close() {
    this.db.close();
  }
}

class Mini {
  constructor() {
    this.ms = new MiniSearch({ fields: ['body'], idField: 'id' });
  }
  insertBatch(docs) {
    this.ms.addAll(docs.map((d) => ({ id: d.id, body: d.body })));
  }
  search(text, limit) {
    return this.ms.search(words(text).join(' '), { combineWith: 'OR' }).slice(0, limit).map((r) => String(r.id));
  }
}

module.exports = { Fts5, Mini, words };
