export * from './errors';
export * from './ids';
export * from './types';
export * from './manifest';
export * from './json';
export * from './zones';
export * from './kahan';
