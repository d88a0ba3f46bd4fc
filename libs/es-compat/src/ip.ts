/** IP addresses as 128-bit numbers (IPv4 mapped into ::ffff:0:0/96, as Elasticsearch's ip type does). */
export function ipToBig(s: string): bigint | null {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (v4) {
    const p = v4.slice(1).map(Number);
    if (p.some((x) => x > 255)) return null;
    return (0xffffn << 32n) | BigInt(((p[0] << 24) >>> 0) + (p[1] << 16) + (p[2] << 8) + p[3]);
  }
  if (!s.includes(':')) return null;
  let head = s;
  let tailV4: bigint | null = null;
  const lastColon = s.lastIndexOf(':');
  if (s.slice(lastColon + 1).includes('.')) {
    const v = ipToBig(s.slice(lastColon + 1));
    if (v === null) return null;
    tailV4 = v & 0xffffffffn;
    head = s.slice(0, lastColon + 1) + '0:0';
  }
  const [l, r] = head.split('::');
  const left = l ? l.split(':') : [];
  const right = r !== undefined && r !== '' ? r.split(':') : [];
  const fill = head.includes('::') ? 8 - left.length - right.length : 0;
  const groups = [...left, ...new Array(fill).fill('0'), ...right];
  if (groups.length !== 8 || groups.some((g) => !/^[0-9a-f]{1,4}$/i.test(g))) return null;
  let n = 0n;
  for (const g of groups) n = (n << 16n) | BigInt(parseInt(g, 16));
  if (tailV4 !== null) n = (n & ~0xffffffffn) | tailV4;
  return n;
}

export function bigToIp(n: bigint): string {
  if (n >> 32n === 0xffffn) {
    const v = Number(n & 0xffffffffn);
    return [v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255].join('.');
  }
  const g: number[] = [];
  for (let i = 7; i >= 0; i--) g.push(Number((n >> BigInt(i * 16)) & 0xffffn));
  let best = -1, bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen && j - i > 1) { best = i; bestLen = j - i; }
    i = j;
  }
  const hex = g.map((x) => x.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/** A CIDR mask → [from, to) as 128-bit numbers. */
export function cidr(mask: string): [bigint, bigint] | null {
  const [addr, bits] = mask.split('/');
  const base = ipToBig(addr);
  if (base === null || bits === undefined) return null;
  let prefix = Number(bits);
  if (!addr.includes(':')) prefix += 96;
  const size = 1n << BigInt(128 - prefix);
  const from = (base / size) * size;
  return [from, from + size];
}
