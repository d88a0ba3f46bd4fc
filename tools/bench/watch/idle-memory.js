/**
 * The watch benchmark's memory phase (bench.js): server memory per idle subscriber, read after
 * forced full GCs (memory.js, preloaded into the server with --expose-gc). No writes meanwhile.
 *
 *   0. a warm-up: min(n, 50) streams opened and closed (the code that opens, holds and closes a
 *      stream compiled before the baseline: ~1 MiB of it, not the streams' memory; few, because
 *      the room they leave in the heap and malloc's arenas is reused by the measured streams,
 *      whose memory would be undercounted by as much: at most 50/n of it);
 *   1. two readings of the server with no stream open, a second apart: the baseline, and how
 *      much two readings differ with nothing changing (the noise, printed per subscriber);
 *   2. `n` streams opened by a separate process (subscribers.js, the same queries as the write
 *      phases'), left idle `idle` s, then two readings WHILE they are open;
 *   3. the streams closed, one more reading: what the server gave back (the heap should return to
 *      the baseline; RSS need not, malloc keeps freed pages).
 *   4. the peer, the same steps against a bare node HTTPS server holding one response per
 *      connection (bare-tls.js, same node flags and probe): what node and OpenSSL cost for an
 *      idle TLS response before anything of ours; printed beside ours, with what ours adds.
 * Per subscriber: (open − baseline) / n of RSS, V8 heap used, and external + array buffers
 * (off-heap memory V8 knows of: Buffers). RSS includes what no V8 figure counts: each
 * connection's TLS state in OpenSSL and the kernel's socket is not in RSS at all.
 */
'use strict';
const { fork } = require('child_process');
const path = require('path');
const { readMemory } = require('./memory');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const KiB = (bytes) => bytes / 1024;
const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');

/** Subscriber i follows rows with v % classes = i % classes of table i % tables (the write phases' queries). */
function subscriberPaths(T, n, tables, classes) {
  return Array.from({ length: n }, (_, i) => `${T}/watch?sql=${encodeURIComponent(`SELECT id, v FROM bench.t${i % tables} WHERE v % ${classes} = ${i % classes}`)}`);
}

/** Forks subscribers.js; `ask(msg, key)` sends a message and resolves with the reply carrying `key`. */
function forkSubscribers() {
  const subs = fork(path.join(__dirname, 'subscribers.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const reply = (key) => new Promise((res) => subs.once('message', (m) => (m[key] !== undefined ? res(m) : null)));
  return { subs, reply };
}

/** Opens `paths` from a separate process (subscribers.js), 20 at a time; resolves once each sent its first event. */
async function openStreams(url, token, ca, paths) {
  const { subs, reply } = forkSubscribers();
  subs.send({ open: { url, token, ca, paths } });
  await reply('ready');
  return subs;
}

async function closeStreams(subs) {
  subs.send({ close: true });
  await new Promise((res) => subs.once('exit', res));
}

/** Steps 0–3 (above) against the server `proc` (its probe writes to `memFile`), `paths(k)` the first k streams' paths. */
async function measure(proc, memFile, url, token, ca, n, idle, paths, opened) {
  const read = () => readMemory(proc, memFile);
  await closeStreams(await openStreams(url, token, ca, paths(Math.min(n, 50))));
  await sleep(1000);
  const base0 = await read();
  await sleep(1000);
  const base1 = await read();
  const t0 = Date.now();
  const subs = await openStreams(url, token, ca, paths(n));
  const openMs = Date.now() - t0;
  const open = await opened();
  await sleep(idle * 1000);
  const held0 = await read();
  await sleep(1000);
  const held1 = await read();
  await closeStreams(subs);
  await sleep(2000); // (the server sees the connections close)
  const after = await read();
  return { n, open, openMs, base0, base1, held0, held1, after };
}

async function idleMemory({ proc, memFile, dir, url, token, ca, T, n, tables, classes, idle, metric, tenant, nodeArgs }) {
  const ours = await measure(proc, memFile, url, token, ca, n, idle, (k) => subscriberPaths(T, k, tables, classes), () => metric(`db_watch_subscribers\\{tenant="${tenant}"\\}`));
  // the peer: a bare node HTTPS server holding a response per connection (bare-tls.js), same flags and probe
  const peerFile = path.join(dir, 'memory-peer.jsonl');
  const peer = fork(path.join(__dirname, 'bare-tls.js'), [path.join(dir, 'tls/key.pem'), path.join(dir, 'tls/cert.pem')], {
    execArgv: [...nodeArgs, '-r', path.join(__dirname, 'memory.js')],
    env: { ...process.env, MEM_FILE: peerFile },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const { port } = await new Promise((res) => peer.once('message', res));
    const bare = await measure(peer, peerFile, `https://127.0.0.1:${port}`, token, ca, n, idle, (k) => Array.from({ length: k }, () => '/'), async () => n);
    return { ...ours, peer: bare };
  } finally {
    peer.kill();
  }
}

function memoryTable(m) {
  const per = (a, b, k) => KiB(b[k] - a[k]) / m.n;
  const peer = (k) => per(m.peer.base1, m.peer.held1, k);
  const [b0, b1, h0, h1, af] = [m.base0, m.base1, m.held0, m.held1, m.after];
  const row = (label, k) =>
    `| ${label} | ${f(KiB(b1[k]) / 1024)} | ${f(KiB(h1[k]) / 1024)} | ${f(per(b1, h1, k), 2)} (${f(per(b0, h0, k), 2)}) | ${f(Math.abs(per(b0, b1, k)), 2)} | ${f(KiB(af[k]) / 1024)} |`;
  const rss = per(b1, h1, 'rss');
  return [
    `\nserver memory per idle subscriber (${m.n} streams open (the server's gauge: ${m.open}), opened in ${f(m.openMs / 1000)} s; every reading after forced full GCs, memory.js):`,
    '| measure | no streams MiB | streams open MiB | per subscriber KiB: 2nd readings (1st) | noise per subscriber KiB (two readings, no stream) | after closing MiB |',
    '|---|---|---|---|---|---|',
    row('RSS', 'rss'),
    row('V8 heap used', 'heapUsed'),
    row('external (of it array buffers: next row)', 'external'),
    row('array buffers', 'arrayBuffers'),
    `| RSS per idle subscriber: target ≤ 64 KiB | | | ${f(rss, 2)} ${rss <= 64 ? 'met' : 'MISSED'} | | |`,
    `| peer: a bare node HTTPS server holding one response per connection (bare-tls.js), RSS / V8 heap per connection KiB | | | ${f(peer('rss'), 2)} / ${f(peer('heapUsed'), 2)} (noise ${f(Math.abs(per(m.peer.base0, m.peer.base1, 'rss')), 2)} / ${f(Math.abs(per(m.peer.base0, m.peer.base1, 'heapUsed')), 2)}) | | |`,
    `| ours beyond the peer: RSS / V8 heap per subscriber KiB (ratio) | | | ${f(rss - peer('rss'), 2)} / ${f(per(b1, h1, 'heapUsed') - peer('heapUsed'), 2)} (${f(rss / peer('rss'), 2)}× / ${f(per(b1, h1, 'heapUsed') / peer('heapUsed'), 2)}×) | | |`,
  ].join('\n');
}

module.exports = { idleMemory, memoryTable, subscriberPaths, forkSubscribers };
