/** The `unnest` node: one row per element of a JSON array per input row (libs/plan nodes/unnest.ts). */
import type { NodeOf } from '@mmdb/plan';
import { hashKey, toInteger, toReal, toText, type Tuple, type Value } from '../values';
import { jsonElements } from './json-functions';
import { expr, mk, type C, type CompileFn, type Op } from './op-kit';

const CAST: Record<string, (v: Value) => Value> = { real: toReal, integer: toInteger, text: toText };

export function unnestOp(n: NodeOf<'unnest'>, c: C, compile: CompileFn): Op {
  const input = compile(n.input, c);
  const elems = expr(c, input.cols)(n.expr);
  const lower = n.as.toLowerCase();
  const at = input.cols.findIndex((x) => x.name.toLowerCase() === lower);
  const aff = n.affinity ? { aff: n.affinity } : {};
  const cols = at >= 0 ? input.cols.map((x, i) => (i === at ? { name: x.name, ...aff } : x)) : [...input.cols, { name: n.as, ...aff }];
  const cast = n.affinity ? CAST[n.affinity] : undefined;
  const distinct = n.distinct === true;
  const outer = n.outer === true;
  return mk(n, cols, [input], function* (ctx, up) {
    for (const b of input.run(ctx, up)) {
      ctx.check();
      const out: Tuple[] = [];
      for (const r of b) {
        let vs = jsonElements(elems(r, up));
        if (cast) vs = vs.map(cast);
        if (outer && !vs.length) vs = [null];
        const seen = distinct && vs.length > 1 ? new Set<string>() : null;
        for (const v of vs) {
          if (seen) {
            const k = hashKey(v);
            if (seen.has(k)) continue;
            seen.add(k);
          }
          const t = r.slice();
          if (at >= 0) t[at] = v;
          else t.push(v);
          out.push(t);
        }
      }
      yield out;
    }
  });
}
