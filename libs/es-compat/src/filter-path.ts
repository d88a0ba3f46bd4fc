/** `filter_path`: keeps only the response paths named (with `*` and `**` wildcards, `-` to exclude). */
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function matchSeg(p: string, k: string): boolean {
  if (p === '*' || p === '**') return true;
  if (!p.includes('*')) return p === k;
  return new RegExp(`^${p.split('*').map((x) => x.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`).test(k);
}

function include(v: unknown, paths: string[][]): unknown {
  if (paths.some((p) => p.length === 0)) return v;
  if (Array.isArray(v)) {
    const out = v.map((x) => include(x, paths)).filter((x) => x !== undefined);
    return out.length ? out : undefined;
  }
  if (!isObj(v)) return undefined;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    const next: string[][] = [];
    for (const p of paths) {
      if (p[0] === '**') { next.push(p); next.push(p.slice(1)); if (p.length > 1 && matchSeg(p[1], k)) next.push(p.slice(2)); }
      else if (matchSeg(p[0], k)) next.push(p.slice(1));
    }
    if (!next.length) continue;
    const r = include(x, next);
    if (r !== undefined) out[k] = r;
  }
  return Object.keys(out).length ? out : undefined;
}

function exclude(v: unknown, path: string[]): unknown {
  if (Array.isArray(v)) return v.map((x) => exclude(x, path));
  if (!isObj(v) || !path.length) return v;
  if (path[0] === '**') {
    const here = exclude(v, path.slice(1)) as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(here)) out[k] = exclude(x, path);
    return out;
  }
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if (matchSeg(path[0], k)) {
      if (path.length === 1) continue;
      out[k] = exclude(x, path.slice(1));
    } else out[k] = x;
  }
  return out;
}

export function applyFilterPath(body: unknown, spec: string | undefined): unknown {
  if (!spec) return body;
  const parts = spec.split(',').map((s) => s.trim()).filter(Boolean);
  const inc = parts.filter((p) => !p.startsWith('-')).map((p) => p.split('.'));
  const exc = parts.filter((p) => p.startsWith('-')).map((p) => p.slice(1).split('.'));
  let out = body;
  if (inc.length) out = include(out, inc) ?? {};
  for (const e of exc) out = exclude(out, e);
  return out;
}
