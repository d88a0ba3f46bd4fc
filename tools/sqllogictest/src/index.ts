export * from './parse';
export * from './format';
export * from './runner';
export * from './targets';
