// The harness's writing client: writes rows through whichever node answers
// /ready?require=write with 200, retrying per spec §7.3, and records every outcome by id so
// the harness can check afterwards what survived.
'use strict';
const crypto = require('crypto');
const { request, writer } = require('./cluster');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** Spec §7.3: 500/502/503/504 back off 0.25, 0.5, 1, 2 s (cap 4 s), at most 3 retries, idempotent requests only. */
const BACKOFF = [250, 500, 1000, 2000];
const MAX_RETRIES = 3;
const RETRYABLE = new Set([500, 502, 503, 504]);

class Load {
  /** `path(id)`: the row's URL path; `body(id)`: its JSON body. */
  constructor(nodes, { writers, path, body }) {
    this.nodes = nodes;
    this.writers = writers;
    this.path = path;
    this.body = body;
    this.next = 1;
    this.running = false;
    /** id -> {kind: 'sync'|'degraded'|'failed', node, at, status?} */
    this.outcomes = new Map();
    /** every 2xx in order: {at, node} */
    this.accepted = [];
    this.target = null;
    /** node name -> [{stoppedAt, resumedAt}] while the harness pauses it */
    this.pauses = new Map();
    /** 2xx answers to requests sent to a node while it was stopped (it wrote after resuming) */
    this.splitBrain = 0;
  }

  /** The node taking writes: the last one that did, else whichever answers /ready?require=write (polled until one does). */
  async holder() {
    for (;;) {
      if (this.target && this.target.alive) return this.target;
      this.target = await writer(this.nodes);
      if (this.target) return this.target;
      if (!this.running) return null;
      await sleep(25);
    }
  }

  stoppedWhen(node, t) {
    return (this.pauses.get(node.name) ?? []).some((p) => t >= p.stoppedAt && (p.resumedAt === null || t < p.resumedAt));
  }

  /**
   * One write with an Idempotency-Key, retried per spec §7.3. A 503 naming a live holder is
   * retried there (a redirect: it still counts as one of the 3 retries, without the sleep).
   */
  async writeOne(id) {
    const key = crypto.randomUUID();
    let last = 'network';
    for (let attempt = 0; attempt <= MAX_RETRIES; attempt++) {
      const node = await this.holder();
      if (!node) break;
      const sent = Date.now();
      const r = await request(node, 'PUT', this.path(id), { body: this.body(id), headers: { 'idempotency-key': key } }).catch(() => null);
      if (r && r.status >= 200 && r.status < 300) {
        const at = Date.now();
        if (this.stoppedWhen(node, sent)) this.splitBrain++;
        this.outcomes.set(id, { kind: r.headers['x-db-replication'] === 'degraded' ? 'degraded' : 'sync', node: node.name, at });
        this.accepted.push({ at, node: node.name });
        return;
      }
      last = r ? r.status : 'network';
      if (r && r.status === 429) {
        await sleep(1000 * Number(r.headers['retry-after'] ?? 1));
        continue;
      }
      if (r && !RETRYABLE.has(r.status)) break;
      if (this.target === node) this.target = null; // find the writer again
      const named = r && r.status === 503 && r.json ? this.nodes.find((n) => n.name === r.json.holder && n.alive && n !== node) : undefined;
      if (named) this.target = named;
      else if (attempt < MAX_RETRIES) await sleep(BACKOFF[attempt]);
    }
    this.outcomes.set(id, { kind: 'failed', at: Date.now(), status: last });
  }

  start() {
    this.running = true;
    this.loops = Array.from({ length: this.writers }, async () => {
      while (this.running) await this.writeOne(this.next++);
    });
  }

  async stop() {
    this.running = false;
    await Promise.all(this.loops);
  }

  /** ms from `t` to the first write accepted after it by a node other than `notNode` (NaN: none yet). */
  firstAcceptedAfter(t, notNode) {
    const a = this.accepted.find((x) => x.at > t && x.node !== notNode);
    return a ? a.at - t : NaN;
  }

  count(kind) {
    let n = 0;
    for (const o of this.outcomes.values()) if (o.kind === kind) n++;
    return n;
  }
}

module.exports = { Load };
