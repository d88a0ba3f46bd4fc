import type { Pass } from './optimizer';
export const hashJoin: Pass = { name: 'hash_join', run: (plan) => plan };
