import type { Pass } from './optimizer';
export const predicatePushdown: Pass = { name: 'predicate_pushdown', run: (plan) => plan };
