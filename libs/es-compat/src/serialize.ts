/**
 * JSON text of a response: `stringifyJson` (libs/core), the writer every other route answers
 * with. A `long` beyond ±2^53 held in a document (a bigint, parsed exactly) prints digit for
 * digit, as Elasticsearch prints its longs; a computed double beyond 2^53 (a sum, an average)
 * prints in exponent form (`1.0e+20`), as Elasticsearch prints a double (`1.0E20`).
 */
import { stringifyJson } from '@mmdb/core';

export function serialize(body: unknown): string {
  return stringifyJson(body);
}
