/**
 * Diagnostic for inproc.js (`--alloc 1`): what the watch fan-out allocates per stream and burst.
 * V8's sampling heap profiler (inspector, in the same process) runs through the phase with
 * sessions, counting every sampled object whether a GC later collected it or not; the samples
 * whose stack passes through the built watch code (`dist/apps/api/watch/`) are the fan-out's,
 * whatever they call (the match, the feed's poll, serialization). Answers the bytes per stream
 * and burst and the largest sites (function < caller). With `--alloc 2`, only objects that
 * outlived a scavenge (V8 drops a sample when a minor GC collects it; those still young when the
 * profile stops count too): where the fan-out's survivors, candidates for promotion, come from.
 */
'use strict';
const inspector = require('inspector');

const FANOUT = /[\\/]apps[\\/]api[\\/]watch[\\/]/;

function allocProfile(mode) {
  const s = new inspector.Session();
  s.connect();
  const post = (m, p) => new Promise((res, rej) => s.post(m, p, (e, r) => (e ? rej(e) : res(r))));
  const name = (n) => `${n.callFrame.functionName || '(anon)'} ${(n.callFrame.url || '').replace(/.*[\\/]/, '')}:${n.callFrame.lineNumber + 1}`;
  return {
    start: () => post('HeapProfiler.startSampling', { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: mode !== 2 }),
    /** Stops; answers {bytes, sites: [[site, bytes]…]} of the samples under the fan-out's frames. */
    stop: async () => {
      const { profile } = await post('HeapProfiler.stopSampling');
      s.disconnect();
      const sites = new Map();
      let bytes = 0;
      const walk = (n, inFanout, parent) => {
        const here = inFanout || FANOUT.test(n.callFrame.url || '');
        if (here && n.selfSize) {
          bytes += n.selfSize;
          const k = `${name(n)} < ${parent}`;
          sites.set(k, (sites.get(k) ?? 0) + n.selfSize);
        }
        for (const c of n.children) walk(c, here, name(n));
      };
      walk(profile.head, false, '(root)');
      return { bytes, sites: [...sites].sort((a, b) => b[1] - a[1]) };
    },
  };
}

module.exports = { allocProfile };
