import type { EsBackend } from '../port';

/** A backend for the plan builders' unit tests: `read` answers the plans, nothing is written (no tables, LSN 0). */
export function readBackend(read: EsBackend['read']): EsBackend {
  return { tables: () => [], commit: async () => 0, drop: async () => undefined, tableLsn: async () => 0, read };
}
