import type { Pass } from './optimizer';
export const constantFolding: Pass = { name: 'constant_folding', run: (plan) => plan };
