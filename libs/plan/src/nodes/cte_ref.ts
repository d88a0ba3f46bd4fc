/** Reads the rows of a CTE bound by an enclosing `with`. Columns are named `alias.col` when `alias` is set. */
export interface CteRefNode { readonly op: 'cte_ref'; readonly name: string; readonly alias?: string }
export const cteRef = (name: string, alias?: string): CteRefNode => ({ op: 'cte_ref', name, ...(alias ? { alias } : {}) });
