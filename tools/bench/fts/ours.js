// Our side: FtsParticipant on a real TenantStore (classic-level in a temp dir), rows of a
// table whose manifest declares `body` as a [[fulltext]] field.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { TenantStore } = require('@mmdb/storage');
const { FtsParticipant } = require('@mmdb/fts');

const { manifest } = require('./manifest');

class Ours {
  static async open(opts = {}) {
    const o = new Ours();
    o.dir = fs.mkdtempSync(path.join(opts.tmp || os.tmpdir(), 'fts-bench-'));
    o.fts = new FtsParticipant();
    o.store = await TenantStore.open({ dir: o.dir, participants: [o.fts], sync: opts.sync !== false });
    await o.store.registerSchema(manifest(opts));
    return o;
  }
  /** One commit (one durable frame) per batch of rows. */
  async insertBatch(docs) {
    await this.store.commit({ changes: docs.map((d) => ({ op: 'put', schema: 'bench.docs', row: { id: d.id, body: d.body } })) });
  }
  async search(q, limit, opts) {
    return (await this.fts.search('bench.docs', 'body', q, limit, opts)).map((h) => h.doc_id);
  }
  async close() {
    await this.store.close();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

module.exports = { Ours, manifest };
