import type { Pass } from './optimizer';
export const limitPushdown: Pass = { name: 'limit_pushdown', run: (plan) => plan };
