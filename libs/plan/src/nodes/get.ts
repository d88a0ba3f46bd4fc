import type { Expr } from '../expr';
/** Primary-key point lookup: zero or one row. `key` holds one expression per pk column. */
export interface GetNode { readonly op: 'get'; readonly schema: string; readonly alias?: string; readonly key: readonly Expr[] }
export const get = (schema: string, key: readonly Expr[], alias?: string): GetNode => ({ op: 'get', schema, key, ...(alias ? { alias } : {}) });
