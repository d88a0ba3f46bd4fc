import type { Expr } from '../expr';
import type { PlanNode } from '../node';
/** Skips `offset` rows then passes at most `limit` (a negative limit means no limit). */
export interface LimitNode { readonly op: 'limit'; readonly input: PlanNode; readonly limit?: Expr; readonly offset?: Expr }
export const limit = (input: PlanNode, lim?: Expr, offset?: Expr): LimitNode => ({ op: 'limit', input, ...(lim ? { limit: lim } : {}), ...(offset ? { offset } : {}) });
