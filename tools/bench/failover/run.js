#!/usr/bin/env node
/**
 * Failover harness and replication benchmark (libs/replication README, issue targets below).
 *
 *   npm run build && node tools/bench/failover/run.js [--kills 10] [--stops 5] [--ttl 5000] [--writers 8] [--secs 10] [--loads 8,32] [--quick] [--only failover|throughput]
 *
 * Part 1, failover: etcd + 3 nodes on loopback, DB_REPLICATION_SYNC_FOLLOWERS=1. `--writers`
 * clients write rows (each with an Idempotency-Key) to whichever node answers
 * /ready?require=write with 200, following the spec §7.3 retry rules (client.js). The harness
 * SIGKILLs the current holder `--kills`
 * times and SIGSTOPs it `--stops` times (for two TTLs, then SIGCONT), each time waiting for the
 * old holder to be back and caught up. Then it reads every acknowledged row from the final
 * holder. It reports: time from kill/stop to the first write accepted by the new holder
 * (target ≤ TTL + 2 s), sync-acknowledged writes lost (target 0), degraded writes lost
 * (counted), split-brain writes (a 2xx to a write sent to a paused holder, answered after it
 * resumed; the harness also sends 4 such writes itself before each SIGCONT: target 0).
 *
 * Part 2, throughput: one node with no etcd, two nodes with asynchronous replication, and two
 * nodes with one sync follower, all started side by side and measured in 1 s turns (round
 * robin, `--secs` turns each) at each load of `--loads` (default 8,32 concurrent writers)
 * (target: sync ≥ 50% of the single node).
 *
 * --quick: 2 kills, 1 stop, TTL 1500 ms, 3 s per throughput run (a smoke run).
 * --only failover | --only throughput: one part alone.
 */
'use strict';
const https = require('https');
const { LocalEtcd } = require('@mmdb/replication');
const { TENANT, TOKEN, OPERATOR, request, startCluster, writer } = require('./cluster');
const { Load } = require('./client');

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
const ONLY = args.includes('--only') ? args[args.indexOf('--only') + 1] : null;
/** Concurrent writers of the throughput runs (each setup at each load). */
const LOADS = (args.includes('--loads') ? args[args.indexOf('--loads') + 1] : '8,32').split(',').map(Number);
const T = `/v1/tenants/${TENANT}`;
const SCHEMA = 'namespace = "bench"\ntable = "kv"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "v"\nty = "str"\n';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return !s.length ? NaN : s.length % 2 ? s[m] : Math.round((s[m - 1] + s[m]) / 2);
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
    const load = new Load(nodes, { writers: WRITERS, path: (id) => `${T}/rows/bench.kv/${id}`, body: (id) => ({ id, v: `v${id}` }) });
    load.start();
    const events = [];
    const plan = [...Array(KILLS).fill('kill'), ...Array(STOPS).fill('stop')];
    for (const what of plan) {
      await sleep(1000);
      let h = null;
      while (!h) h = await writer(nodes);
      const t0 = Date.now();
      if (what === 'kill') {
        await h.kill('SIGKILL');
      } else {
        const pause = { stoppedAt: t0, resumedAt: null };
        load.pauses.set(h.name, [...(load.pauses.get(h.name) ?? []), pause]);
        h.proc.kill('SIGSTOP');
      }
      let took = NaN;
      for (let i = 0; i < 300 && Number.isNaN(took); i++) {
        await sleep(100);
        took = load.firstAcceptedAfter(t0, h.name);
      }
      if (what === 'kill') await h.start();
      else {
        const p = load.pauses.get(h.name).at(-1);
        if (Date.now() - t0 < 2 * TTL) await sleep(2 * TTL - (Date.now() - t0));
        // Writes sent to the paused holder now reach it only after it resumes, past its lease:
        // each must be refused (any 2xx is a split-brain write).
        const probes = Array.from({ length: 4 }, () => {
          const id = load.next++;
          return request(h, 'PUT', `${T}/rows/bench.kv/${id}`, { body: { id, v: `probe${id}` }, timeoutMs: 15_000 })
            .then((r) => {
              if (r.status >= 200 && r.status < 300) {
                load.splitBrain++;
                load.outcomes.set(id, { kind: r.headers['x-db-replication'] === 'degraded' ? 'degraded' : 'sync', node: h.name, at: Date.now() });
              }
            })
            .catch(() => undefined);
        });
        await sleep(200);
        h.proc.kill('SIGCONT');
        p.resumedAt = Date.now();
        await Promise.all(probes);
      }
      const back = await caughtUp(nodes, h.name);
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
    return { events, lostSync, lostDegraded, splitBrain: load.splitBrain, sync: load.count('sync'), degraded: load.count('degraded'), failed: load.count('failed') };
  } finally {
    for (const n of nodes) await n.kill('SIGKILL');
    await etcd.stop();
  }
}

/** A started setup of the throughput part: its nodes, its etcd, and the node that writes. */
async function setup(label, nodeCount, env, withEtcd) {
  const etcd = withEtcd ? await LocalEtcd.start() : null;
  const { nodes } = await startCluster({ nodes: nodeCount, etcd, env });
  let h = null;
  while (!h) {
    h = await writer(nodes);
    if (!h) await sleep(50);
  }
  await registerSchema(h);
  if (nodeCount > 1) await sleep(500); // the follower connects
  return { label, nodes, etcd, h, id: 1, runs: LOADS.map((writers) => ({ writers, n: 0, ms: 0, degraded: 0 })) };
}

/** `ms` of writes by `run.writers` concurrent writers against the setup's writer. */
async function slice(s, run, ms) {
  const t0 = Date.now();
  const end = t0 + ms;
  await Promise.all(
    Array.from({ length: run.writers }, async () => {
      while (Date.now() < end) {
        const i = s.id++;
        const r = await request(s.h, 'PUT', `${T}/rows/bench.kv/${i}`, { body: { id: i, v: `v${i}` } });
        if (r.status === 200) run.n++;
        if (r.headers['x-db-replication'] === 'degraded') run.degraded++;
      }
    }),
  );
  run.ms += Date.now() - t0;
}

/**
 * The three setups run side by side and are measured in turns of one second (round robin, for
 * `--secs` turns each at each load), so a change in the host's load (other processes, CPU
 * steal) falls on all of them alike instead of on whichever ran at that moment.
 */
async function throughputAll() {
  const tsync = { DB_LEASE_TTL_MS: String(TTL), DB_REPLICATION_SYNC_FOLLOWERS: '1', DB_REPLICATION_SYNC_MS: '1000' };
  const setups = [];
  try {
    setups.push(await setup('single node, no etcd', 1, {}, false));
    setups.push(await setup('2 nodes, async replication', 2, { DB_LEASE_TTL_MS: String(TTL) }, true));
    setups.push(await setup('2 nodes, 1 sync follower', 2, tsync, true));
    for (const [i] of LOADS.entries()) {
      for (const s of setups) await slice(s, s.runs[i], 500); // warm-up, not counted
      for (const s of setups) s.runs[i] = { ...s.runs[i], n: 0, ms: 0, degraded: 0 };
      for (let turn = 0; turn < SECS; turn++) for (const s of setups) await slice(s, s.runs[i], 1000);
    }
    return setups.map((s) => ({ label: s.label, runs: s.runs.map((r) => ({ writers: r.writers, wps: (1000 * r.n) / r.ms, degraded: r.degraded })) }));
  } finally {
    for (const s of setups) {
      for (const x of s.nodes) await x.kill('SIGKILL');
      await s.etcd?.stop();
    }
  }
}

function printFailover(f) {
  const kills = f.events.filter((e) => e.what === 'kill').map((e) => e.ms);
  const stops = f.events.filter((e) => e.what === 'stop').map((e) => e.ms);
  const ok = (b) => (b ? 'ok' : 'MISSED');
  const target = TTL + 2000;
  const worst = (xs) => (xs.length ? Math.max(...xs) : NaN);
  console.log(`\nFailover (3 nodes, TTL ${TTL} ms, 1 sync follower, ${WRITERS} writers): ${f.sync} sync-acknowledged, ${f.degraded} degraded, ${f.failed} failed after 3 retries\n`);
  console.log('| measure | value | target |');
  console.log('|---|---|---|');
  console.log(`| kill → first write on the new holder, p50 / max (${kills.length} kills) | ${median(kills)} / ${worst(kills)} ms | ≤ ${target} ms ${ok(!(worst(kills) > target) && !kills.some(Number.isNaN))} |`);
  console.log(`| stop → first write on the new holder, p50 / max (${stops.length} stops) | ${median(stops)} / ${worst(stops)} ms | ≤ ${target} ms ${ok(!(worst(stops) > target) && !stops.some(Number.isNaN))} |`);
  console.log(`| each kill / stop, ms | ${f.events.map((e) => `${e.what[0]}:${e.ms}`).join(' ')} | |`);
  console.log(`| sync-acknowledged writes lost | ${f.lostSync} | 0 ${ok(f.lostSync === 0)} |`);
  console.log(`| degraded writes lost | ${f.lostDegraded} of ${f.degraded} | counted |`);
  console.log(`| split-brain writes | ${f.splitBrain} | 0 ${ok(f.splitBrain === 0)} |`);
  console.log(`| old holders rejoined and caught up | ${f.events.filter((e) => e.rejoined).length} of ${f.events.length} | all |`);
}

async function main() {
  const t0 = Date.now();
  if (ONLY !== 'throughput') printFailover(await failover());
  if (ONLY !== 'failover') {
    const [single, asyncRep, syncRep] = await throughputAll();
    console.log(`\nWrite throughput (durable single-row PUTs; the three setups side by side, measured in 1 s turns, ${SECS} turns each per load)\n`);
    console.log(`| setup | ${LOADS.map((w) => `${w} writers: writes/s (vs single)`).join(' | ')} | degraded answers |`);
    console.log(`|---|${LOADS.map(() => '---|').join('')}---|`);
    for (const r of [single, asyncRep, syncRep]) {
      const cells = r.runs.map((x, i) => `${x.wps.toFixed(0)} (${((100 * x.wps) / single.runs[i].wps).toFixed(0)}%)`);
      console.log(`| ${r.label} | ${cells.join(' | ')} | ${r.runs.reduce((a, x) => a + x.degraded, 0)} |`);
    }
    for (const [i, w] of LOADS.entries()) {
      const ratio = syncRep.runs[i].wps / single.runs[i].wps;
      console.log(`sync follower vs single node at ${w} writers: ${(100 * ratio).toFixed(0)}% (target ≥ 50%) ${ratio >= 0.5 ? 'ok' : 'MISSED'}`);
    }
  }
  console.log(`\n(run took ${((Date.now() - t0) / 1000).toFixed(0)} s)`);
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
