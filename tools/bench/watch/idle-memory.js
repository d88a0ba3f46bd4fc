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

async function idleMemory({ proc, memFile, url, token, ca, T, n, tables, classes, idle, metric, tenant }) {
  const read = () => readMemory(proc, memFile);
  const warm = forkSubscribers();
  warm.subs.send({ open: { url, token, ca, paths: subscriberPaths(T, Math.min(n, 50), tables, classes) } });
  await warm.reply('ready');
  warm.subs.send({ close: true });
  await new Promise((res) => warm.subs.once('exit', res));
  await sleep(1000);
  const base0 = await read();
  await sleep(1000);
  const base1 = await read();
  const { subs, reply } = forkSubscribers();
  const t0 = Date.now();
  subs.send({ open: { url, token, ca, paths: subscriberPaths(T, n, tables, classes) } });
  await reply('ready');
  const openMs = Date.now() - t0;
  const open = await metric(`db_watch_subscribers\\{tenant="${tenant}"\\}`);
  await sleep(idle * 1000);
  const held0 = await read();
  await sleep(1000);
  const held1 = await read();
  subs.send({ close: true });
  await new Promise((res) => subs.once('exit', res));
  await sleep(2000); // (the server sees the connections close)
  const after = await read();
  return { n, open, openMs, base0, base1, held0, held1, after };
}

function memoryTable(m) {
  const per = (a, b, k) => KiB(b[k] - a[k]) / m.n;
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
  ].join('\n');
}

module.exports = { idleMemory, memoryTable, subscriberPaths, forkSubscribers };
