import type { PlanNode } from '../node';
/**
 * Selects the rows of `schema` that `input` produces for deletion. Over SQL this only translates:
 * the answer lists the primary keys; rows are removed by the row DELETE endpoint (spec §4.5).
 */
export interface DeleteNode { readonly op: 'delete'; readonly schema: string; readonly alias: string; readonly input: PlanNode }
export const del = (schema: string, alias: string, input: PlanNode): DeleteNode => ({ op: 'delete', schema, alias, input });
