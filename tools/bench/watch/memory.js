/**
 * Bench-only preload for the server (never production code): `bench.js` starts the server with
 * `--expose-gc -r tools/bench/watch/memory.js` and MEM_FILE=<path>. On SIGURG the server runs
 * full garbage collections until the heap stops shrinking (at least two, with a turn of the event
 * loop between them so that weak callbacks and finalizers run), then appends one JSON line to
 * MEM_FILE: `{seq, rss, heapUsed, heapTotal, external, arrayBuffers}` (bytes,
 * `process.memoryUsage()` read right after the last collection).
 *
 * Why: the RSS of a process that is not collected at a known point moves by more between two
 * readings than a few hundred idle streams hold (quiet runs printed −102 to +41 KiB per
 * subscriber for 200 streams); after forced full GCs, what is left is what is live.
 * `readMemory(proc, file)` (below) is the bench's side: signal, then wait for the line.
 * SIGURG because its default action is to be ignored (a server without this file is not killed),
 * Nest's shutdown hooks take SIGUSR2, and cpu-profile.js takes SIGWINCH.
 */
'use strict';
const fs = require('fs');

const file = process.env.MEM_FILE;
if (file && require.main !== module && typeof globalThis.gc === 'function') {
  let seq = 0;
  const collect = async () => {
    let last = Infinity;
    for (let i = 0; i < 6; i++) {
      globalThis.gc();
      await new Promise((r) => setImmediate(r));
      const used = process.memoryUsage().heapUsed;
      if (i >= 1 && used >= last - 64 * 1024) break; // (stopped shrinking)
      last = used;
    }
    globalThis.gc();
    const m = process.memoryUsage();
    fs.appendFileSync(file, JSON.stringify({ seq: ++seq, rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers }) + '\n');
  };
  let busy = Promise.resolve();
  process.on('SIGURG', () => {
    busy = busy.then(collect, collect);
  });
}

/** The bench's side: signals the server `proc` and resolves with the reading it appended to `file` (rejects after 20 s). */
async function readMemory(proc, file) {
  const lines = () => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);
  const before = lines().length;
  proc.kill('SIGURG');
  const deadline = Date.now() + 20_000;
  for (;;) {
    const now = lines();
    if (now.length > before) return JSON.parse(now[now.length - 1]);
    if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`the server exited (${proc.exitCode ?? proc.signalCode}) before it reported its memory`);
    if (Date.now() > deadline) throw new Error('the server did not report its memory (is it started with --expose-gc and -r memory.js?)');
    await new Promise((r) => setTimeout(r, 20));
  }
}

module.exports = { readMemory };
