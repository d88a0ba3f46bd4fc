#!/usr/bin/env node
/**
 * Failover harness and replication benchmark (libs/replication README, issue targets below).
 *
 *   npm run build && node tools/bench/failover/run.js [--kills 10] [--stops 5] [--ttl 5000] [--writers 8] [--secs 10] [--quick]
 *
 * Part 1, failover: etcd + 3 nodes on loopback, DB_REPLICATION_SYNC_FOLLOWERS=1. `--writers`
 * clients write rows (each with an Idempotency-Key) to whichever node takes writes, following
 * the spec §7.3 retry rules (503/504: backoff 0.25, 0.5, 1, 2 s, at most 3 retries; a 503 that
 * names the holder is retried there at once). The harness SIGKILLs the current holder `--kills`
 * times and SIGSTOPs it `--stops` times (for two TTLs, then SIGCONT), each time waiting for the
 * old holder to be back and caught up. Then it reads every acknowledged row from the final
 * holder. It reports: time from kill/stop to the first write accepted by the new holder
 * (target ≤ TTL + 2 s), sync-acknowledged writes lost (target 0), degraded writes lost
 * (counted), split-brain writes (a 2xx from a paused holder after it resumed: target 0).
 *
 * Part 2, throughput: `--secs` seconds of `--writers` concurrent writers against one node with
 * no etcd, two nodes with asynchronous replication, and two nodes with one sync follower, in
 * the same run (target: sync ≥ 50% of the single node).
 *
 * --quick: 2 kills, 1 stop, TTL 1500 ms, 3 s per throughput run (a smoke run).
 */
'use strict';
const https = require('https');
const { LocalEtcd } = require('@mmdb/replication');
const { TENANT, TOKEN, OPERATOR, request, startCluster, writer } = require('./cluster');

const args = process.argv.slice(2);
const QUICK = args.includes('--quick');
const opt = (name, def, quick) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : QUICK ? quick : def;
};
const KILLS = opt('kills', 10, 2);
const STOPS = opt('stops', 5, 1);
const TTL = opt('ttl', 5000, 1500);
const WRITERS = opt('writers', 8, 4);
const SECS = opt('secs', 10, 3);
const T = `/v1/tenants/${TENANT}`;
const SCHEMA = 'namespace = "bench"\ntable = "kv"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "v"\nty = "str"\n';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[s.length >> 1] : NaN;
};

function registerSchema(node) {
  return new Promise((resolve, reject) => {
    const req = https.request(node.url + `${T}/schemas`, { method: 'POST', agent: node.agent, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain' } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`schema: ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(SCHEMA);
  });
}

/** Writers that follow the holder. Every outcome is recorded per id. */
class Load {
  constructor(nodes) {
    this.nodes = nodes;
    this.next = 1;
    this.running = false;
    this.outcomes = new Map(); // id -> {kind: 'sync'|'degraded'|'failed', node, at}
    this.accepted = []; // {at, node}
    this.target = null;
    this.paused = new Map(); // node name -> {stoppedAt, resumedAt}
    this.splitBrain = 0;
  }

  async holder() {
    for (;;) {
      if (this.target && this.target.alive) return this.target;
      this.target = await writer(this.nodes);
      if (this.target) return this.target;
      await sleep(50);
    }
  }

  async writeOne(id) {
    const key = require('crypto').randomUUID();
    const delays = [250, 500, 1000, 2000];
    let node = await this.holder();
    for (let attempt = 0; ; attempt++) {
      const sent = Date.now();
      const r = await request(node, 'PUT', `${T}/rows/bench.kv/${id}`, { body: { id, v: `v${id}` }, headers: { 'idempotency-key': key } }).catch(() => null);
      if (r && r.status === 200) {
        const p = this.paused.get(node.name);
        if (p && sent >= p.stoppedAt && (p.resumedAt === null || Date.now() >= p.resumedAt) && p.rejoined !== true) this.splitBrain++;
        const kind = r.headers['x-db-replication'] === 'degraded' ? 'degraded' : 'sync';
        this.outcomes.set(id, { kind, node: node.name, at: Date.now() });
        this.accepted.push({ at: Date.now(), node: node.name });
        return;
      }
      if (r && r.status === 503 && r.json && r.json.holder_url) {
        const h = this.nodes.find((n) => n.name === r.json.holder);
        if (h && h.alive && h !== node) {
          this.target = h;
          node = h;
          continue; // a redirect, not a retry
        }
      }
      if (r && r.status !== 503 && r.status !== 504 && r.status !== 500) {
        this.outcomes.set(id, { kind: 'failed', node: node.name, at: Date.now(), status: r.status });
        return;
      }
      if (attempt >= 3) {
        this.outcomes.set(id, { kind: 'failed', node: node.name, at: Date.now(), status: r ? r.status : 'network' });
        return;
      }
      if (!r) this.target = null;
      await sleep(delays[attempt]);
      node = await this.holder();
    }
  }

  start() {
    this.running = true;
    this.loops = Array.from({ length: WRITERS }, async () => {
      while (this.running) await this.writeOne(this.next++);
    });
  }

  async stop() {
    this.running = false;
    await Promise.all(this.loops);
  }

  firstAcceptedAfter(t, notNode) {
    const a = this.accepted.find((x) => x.at > t && x.node !== notNode);
    return a ? a.at - t : NaN;
  }
}

async function caughtUp(nodes, name) {
  for (let i = 0; i < 600; i++) {
    const n = nodes.find((x) => x.name === name);
    const h = await writer(nodes);
    if (h && n.alive) {
      const [a, b] = await Promise.all([h, n].map((x) => request(x, 'GET', '/v1/replication/status', { token: OPERATOR }).catch(() => null)));
      if (a && b && a.status === 200 && b.status === 200 && b.json.role === 'follower' && a.json.last_lsn - b.json.last_lsn < 50) return true;
    }
    await sleep(100);
  }
  return false;
}

async function failover() {
  const etcd = await LocalEtcd.start();
  const { nodes } = await startCluster({ nodes: 3, etcd, env: { DB_LEASE_TTL_MS: String(TTL), DB_REPLICATION_SYNC_FOLLOWERS: '1', DB_REPLICATION_SYNC_MS: '1000' } });
  try {
    const first = await (async () => {
      for (;;) {
        const w = await writer(nodes);
        if (w) return w;
        await sleep(50);
      }
    })();
    await registerSchema(first);
    const load = new Load(nodes);
    load.start();
    const events = [];
    const plan = [...Array(KILLS).fill('kill'), ...Array(STOPS).fill('stop')];
    for (const what of plan) {
      await sleep(1000);
      const h = await load.holder();
      const t0 = Date.now();
      if (what === 'kill') {
        await h.kill('SIGKILL');
      } else {
        load.paused.set(h.name, { stoppedAt: t0, resumedAt: null, rejoined: false });
        h.proc.kill('SIGSTOP');
      }
      let took = NaN;
      for (let i = 0; i < 300 && Number.isNaN(took); i++) {
        await sleep(100);
        took = load.firstAcceptedAfter(t0, h.name);
      }
      if (what === 'kill') await h.start();
      else {
        const p = load.paused.get(h.name);
        if (Date.now() - t0 < 2 * TTL) await sleep(2 * TTL - (Date.now() - t0));
        p.resumedAt = Date.now();
        h.proc.kill('SIGCONT');
      }
      const back = await caughtUp(nodes, h.name);
      if (what === 'stop') load.paused.get(h.name).rejoined = true;
      events.push({ what, node: h.name, ms: took, rejoined: back });
      process.stderr.write(`${what} ${h.name}: first write on the new holder after ${took} ms; rejoined: ${back}\n`);
    }
    await load.stop();
    // every acknowledged write must be on the final holder
    const final = await writer(nodes);
    let lostSync = 0;
    let lostDegraded = 0;
    const ids = [...load.outcomes].filter(([, o]) => o.kind !== 'failed');
    for (let i = 0; i < ids.length; i += 32) {
      await Promise.all(
        ids.slice(i, i + 32).map(async ([id, o]) => {
          const r = await request(final, 'GET', `${T}/rows/bench.kv/${id}`);
          if (r.status !== 200) o.kind === 'sync' ? lostSync++ : lostDegraded++;
        }),
      );
    }
    const count = (k) => [...load.outcomes.values()].filter((o) => o.kind === k).length;
    return { events, lostSync, lostDegraded, splitBrain: load.splitBrain, sync: count('sync'), degraded: count('degraded'), failed: count('failed') };
  } finally {
    for (const n of nodes) await n.kill('SIGKILL');
    await etcd.stop();
  }
}

async function throughput(label, nodeCount, env, withEtcd) {
  const etcd = withEtcd ? await LocalEtcd.start() : null;
  const { nodes } = await startCluster({ nodes: nodeCount, etcd, env });
  try {
    let h = null;
    while (!h) {
      h = await writer(nodes);
      if (!h) await sleep(50);
    }
    if (nodeCount > 1) await sleep(500); // the follower connects
    await registerSchema(h);
    let n = 0;
    let degraded = 0;
    let id = 1;
    const end = Date.now() + SECS * 1000;
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        while (Date.now() < end) {
          const i = id++;
          const r = await request(h, 'PUT', `${T}/rows/bench.kv/${i}`, { body: { id: i, v: `v${i}` } });
          if (r.status === 200) n++;
          if (r.headers['x-db-replication'] === 'degraded') degraded++;
        }
      }),
    );
    return { label, wps: n / SECS, degraded };
  } finally {
    for (const x of nodes) await x.kill('SIGKILL');
    await etcd?.stop();
  }
}

async function main() {
  const f = await failover();
  const kills = f.events.filter((e) => e.what === 'kill').map((e) => e.ms);
  const stops = f.events.filter((e) => e.what === 'stop').map((e) => e.ms);
  const single = await throughput('single node, no etcd', 1, {}, false);
  const asyncRep = await throughput('2 nodes, async replication', 2, { DB_LEASE_TTL_MS: String(TTL) }, true);
  const syncRep = await throughput('2 nodes, 1 sync follower', 2, { DB_LEASE_TTL_MS: String(TTL), DB_REPLICATION_SYNC_FOLLOWERS: '1', DB_REPLICATION_SYNC_MS: '1000' }, true);
  const ok = (b) => (b ? 'ok' : 'MISSED');
  const target = TTL + 2000;
  console.log(`\nFailover (3 nodes, TTL ${TTL} ms, 1 sync follower, ${WRITERS} writers): ${f.sync} sync-acknowledged, ${f.degraded} degraded, ${f.failed} failed after retries\n`);
  console.log('| measure | value | target |');
  console.log('|---|---|---|');
  console.log(`| kill → first write on the new holder, median / max (${kills.length} kills) | ${median(kills)} / ${Math.max(...kills)} ms | ≤ ${target} ms ${ok(Math.max(...kills) <= target)} |`);
  console.log(`| stop → first write on the new holder, median / max (${stops.length} stops) | ${median(stops)} / ${Math.max(...stops)} ms | ≤ ${target} ms ${ok(stops.length === 0 || Math.max(...stops) <= target)} |`);
  console.log(`| sync-acknowledged writes lost | ${f.lostSync} | 0 ${ok(f.lostSync === 0)} |`);
  console.log(`| degraded writes lost | ${f.lostDegraded} of ${f.degraded} | counted |`);
  console.log(`| split-brain writes | ${f.splitBrain} | 0 ${ok(f.splitBrain === 0)} |`);
  console.log(`| old holders rejoined and caught up | ${f.events.filter((e) => e.rejoined).length} of ${f.events.length} | all |`);
  console.log(`\nWrite throughput (${WRITERS} writers, ${SECS} s each, durable commits)\n`);
  console.log('| setup | writes/s | vs single node | degraded answers |');
  console.log('|---|---|---|---|');
  for (const r of [single, asyncRep, syncRep]) console.log(`| ${r.label} | ${r.wps.toFixed(0)} | ${((100 * r.wps) / single.wps).toFixed(0)}% | ${r.degraded} |`);
  console.log(`\nsync follower vs single node: ${((100 * syncRep.wps) / single.wps).toFixed(0)}% (target ≥ 50%) ${ok(syncRep.wps >= 0.5 * single.wps)}`);
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
