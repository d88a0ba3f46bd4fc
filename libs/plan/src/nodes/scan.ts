/** Full scan of a schema's rows, in primary-key order. Output columns: the manifest's columns, named `alias.col` when `alias` is set. */
export interface ScanNode { readonly op: 'scan'; readonly schema: string; readonly alias?: string; readonly limit?: number }
/** @example scan('app.users') */
export const scan = (schema: string, alias?: string): ScanNode => (alias ? { op: 'scan', schema, alias } : { op: 'scan', schema });
