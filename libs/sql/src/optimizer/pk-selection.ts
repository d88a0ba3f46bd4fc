import type { Pass } from './optimizer';
export const pkSelection: Pass = { name: 'pk_selection', run: (plan) => plan };
