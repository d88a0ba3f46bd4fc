/**
 * JSON text of a response. Integers beyond ±2^53 that a double holds exactly (2^56, ids from
 * other systems) print with all their digits, as Elasticsearch prints its longs; the plain
 * JSON.stringify would print 72057594037927936 as 72057594037927940.
 */
const MARK = '\u0000int:';
const MARK_RX = /"\\u0000int:(-?\d+)"/g;

export function serialize(body: unknown): string {
  let big = false;
  const text = JSON.stringify(body, (_k, v) => {
    if (typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v)) {
      big = true;
      return `${MARK}${BigInt(v).toString()}`;
    }
    return v;
  });
  return big ? text.replace(MARK_RX, '$1') : text;
}
