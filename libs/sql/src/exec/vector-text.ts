/**
 * pgvector's distances between a vector held as JSON text (a stored vector column's value) and
 * a parsed vector, read off the text: no array per row. A top-k's sort recomputes `emb <-> $1`
 * for each of its k rows; parsing each row's text into an array was ~3 KB of garbage and the
 * largest allocation of a hybrid statement (tools/bench/hybrid/README.md).
 *
 * The numbers are exactly JSON.parse's: a decimal of at most 15 significant digits and a power
 * of ten within ±22 is one correctly rounded IEEE division or product of two exact doubles
 * (Clinger's fast path); any other number goes through `Number` (the same conversion JSON.parse
 * uses). The usual spelling (`-0.1234`: digits, a point, digits, then `,` or `]`) is read inline
 * in the distance loop, with no call per number: ~3× faster than a call of the general reader per
 * number, which cost about what JSON.parse does (~9 µs per 128-d row before, ~2.6 after, on the
 * loaded shared host; the sort above a hybrid statement's vector leg reads 20 such rows).
 * The sums run in index order, as the array forms do, so the distances are identical
 * bit for bit. Anything this reader does not take (other text, a length that differs, a
 * non-finite number) answers undefined, and the caller takes the general path and its errors.
 */

const POW10 = Array.from({ length: 23 }, (_, i) => Number(`1e${i}`));

/** The value of the number `num` parsed (a typed array: a double stored in a plain variable outside the function would be a heap number per store). */
const VALUE = new Float64Array(1);

const isDigit = (c: number) => c >= 48 && c <= 57;

/** Parses the JSON number at `i` into VALUE[0]; where it ends, or -1 when there is none (or it is not finite). */
function num(s: string, i: number): number {
  const start = i;
  const neg = s.charCodeAt(i) === 45; // -
  if (neg) i++;
  let c = s.charCodeAt(i);
  if (!isDigit(c)) return -1;
  let m = 0;
  let sig = 0;
  let frac = 0;
  if (c === 48) i++; // a leading 0 stands alone
  else {
    for (; isDigit((c = s.charCodeAt(i))); i++) {
      m = m * 10 + (c - 48);
      sig++;
    }
  }
  if (s.charCodeAt(i) === 46) { // .
    i++;
    if (!isDigit(s.charCodeAt(i))) return -1;
    for (; isDigit((c = s.charCodeAt(i))); i++) {
      if (m !== 0 || c !== 48) sig++;
      m = m * 10 + (c - 48);
      frac++;
    }
  }
  let exp = 0;
  c = s.charCodeAt(i);
  if (c === 101 || c === 69) { // e E
    i++;
    let eneg = false;
    c = s.charCodeAt(i);
    if (c === 43 || c === 45) {
      eneg = c === 45;
      i++;
    }
    if (!isDigit(s.charCodeAt(i))) return -1;
    for (; isDigit((c = s.charCodeAt(i))); i++) if (exp < 10_000) exp = exp * 10 + (c - 48);
    if (eneg) exp = -exp;
  }
  const e10 = exp - frac;
  let x: number;
  if (m === 0) x = 0;
  else if (sig <= 15 && e10 >= -22 && e10 <= 22) x = e10 < 0 ? m / POW10[-e10] : m * POW10[e10];
  else x = Number(s.slice(neg ? start + 1 : start, i));
  if (!Number.isFinite(x)) return -1;
  VALUE[0] = neg ? -x : x;
  return i;
}

const skipWs = (s: string, i: number): number => {
  for (let c = s.charCodeAt(i); c === 32 || c === 10 || c === 13 || c === 9; c = s.charCodeAt(++i));
  return i;
};

/**
 * The distance `fn` (l2_distance, l1_distance, inner_product, negative_inner_product,
 * cosine_distance) between the vector text `text` and `b`, NaN where the array form gives NaN;
 * undefined when `text` is not a JSON array of `b.length` finite numbers (or `fn` is another).
 */
export function textDistance(fn: string, text: string, b: ArrayLike<number>): number | undefined {
  const n = b.length;
  let i = skipWs(text, 0);
  if (text.charCodeAt(i) !== 91 || n === 0) return undefined; // [
  i = skipWs(text, i + 1);
  let s = 0; // l2: Σ(a−b)², l1: Σ|a−b|, else Σa·b
  let na = 0;
  let nb = 0;
  const kind = fn === 'l2_distance' ? 0 : fn === 'l1_distance' ? 1 : fn === 'cosine_distance' ? 2 : fn === 'inner_product' || fn === 'negative_inner_product' ? 3 : -1;
  if (kind < 0) return undefined;
  for (let k = 0; ; k++) {
    if (k >= n) return undefined;
    // the common spelling inline (`-?digits[.digits]` directly followed by `,` or `]`, at most 15
    // significant digits and 22 decimals: the same exact division num() makes); anything else
    // (whitespace, an exponent, more digits) is read by num() from the number's start
    let a = 0;
    let end = i;
    let c = text.charCodeAt(end);
    const neg = c === 45;
    if (neg) c = text.charCodeAt(++end);
    let fast = c >= 48 && c <= 57;
    if (fast) {
      let m = 0;
      let sig = 0;
      let frac = 0;
      if (c === 48) c = text.charCodeAt(++end); // a leading 0 stands alone
      else {
        do {
          m = m * 10 + (c - 48);
          sig++;
          c = text.charCodeAt(++end);
        } while (c >= 48 && c <= 57);
      }
      if (c === 46) { // .
        c = text.charCodeAt(++end);
        if (c >= 48 && c <= 57) {
          do {
            if (m !== 0 || c !== 48) sig++;
            m = m * 10 + (c - 48);
            frac++;
            c = text.charCodeAt(++end);
          } while (c >= 48 && c <= 57);
        } else fast = false;
      }
      if (fast && (c === 44 || c === 93) && sig <= 15 && frac <= 22) {
        a = m === 0 ? 0 : m / POW10[frac];
        if (neg) a = -a;
      } else fast = false;
    }
    if (!fast) {
      end = num(text, i);
      if (end < 0) return undefined;
      a = VALUE[0];
    }
    const y = b[k];
    if (kind === 0) {
      const d = a - y;
      s += d * d;
    } else if (kind === 1) s += Math.abs(a - y);
    else {
      s += a * y;
      if (kind === 2) {
        na += a * a;
        nb += y * y;
      }
    }
    // the fast path stopped on its `,` or `]`
    let sep = c;
    if (fast) i = end;
    else sep = text.charCodeAt((i = skipWs(text, end)));
    if (sep === 44) { // ,
      const w = text.charCodeAt(++i);
      if (w === 32 || w === 10 || w === 13 || w === 9) i = skipWs(text, i);
      continue;
    }
    if (sep !== 93 || k + 1 !== n) return undefined; // ] after exactly n numbers
    if (skipWs(text, i + 1) !== text.length) return undefined;
    break;
  }
  switch (kind) {
    case 0: return Math.sqrt(s);
    case 1: return s;
    case 3: return fn === 'inner_product' ? s : -s;
    default: {
      const qa = Math.sqrt(na);
      const qb = Math.sqrt(nb);
      if (qa === 0 || qb === 0) return NaN;
      return 1 - s / (qa * qb);
    }
  }
}
