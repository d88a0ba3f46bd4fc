const { mkdtempSync } = require('fs'); const path = require('path'); const os = require('os');
const { TenantStore } = require('@mmdb/storage'); const { Migrations } = require('@mmdb/migrations');
(async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dbg-'));
  const store = await TenantStore.open({ dir });
  await store.registerSchema('namespace = "bench"\ntable = "m"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "v"\nty = "f64"\n');
  const changes = []; for (let id = 0; id < 5000; id++) changes.push({ op: 'put', schema: 'bench.m', row: { id, v: id } });
  await store.commit({ changes });
  const pend = new Map(); let n = 0;
  const rc = store.commit.bind(store); store.commit = (req) => { const i = n++; const p = rc(req); pend.set(i, req.route + (req.background ? ' bg' : '')); p.then((r) => pend.delete(i), () => pend.delete(i)); return p; };
  const C = store.coordinator; const log = []; const ag = C.applyGroup.bind(C); C.applyGroup = (g) => { log.push('A' + g.lastLsn); return ag(g); }; const wg = C.writeGroup.bind(C); C.writeGroup = (g, d) => { log.push('W' + g.lastLsn + (d ? 'd' : '')); return wg(g, d); }; const cd = C.coverDeferred.bind(C); C.coverDeferred = (p, w) => { log.push('C[' + (w ?? C.deferred.filter(x => !x.covered)).map(x => x.g.lastLsn).join(',') + ']' + (p ? 'fg' : '')); return cd(p, w); }; process.on('exit', () => console.log(log.join(' ')));
  const m = new Migrations(store, { autostart: true, onError: (id, e) => console.log('ERR', e) }); await m.attach();
  const r = await m.submit({ schema: 'bench.m', operations: [{ op: 'rename_column', from: 'v', to: 'w' }], throttle: { max_rows_per_s: 1e6 } }, 'b');
  const t0 = Date.now(); const c = store.coordinator;
  while (!['ReadyToCutover', 'Failed'].includes(m.get(r.id).state) && Date.now() - t0 < 8000) await new Promise((s) => setTimeout(s, 50));
  console.log(m.get(r.id).state, m.get(r.id).progress.done, c.stats, 'pending commits', [...pend], 'lsns', c.lastLsn, c.writtenLsn, c.nextLsn, 'inWrite', c.inWrite, 'deferred', c.deferred.length, 'running', c.running, 'q', c.queue.length, 'runner running', [...m.runner?.running ?? []]);
  process.exit(0);
})();
