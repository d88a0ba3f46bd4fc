export { NlCompiler, bindParams, manifestFingerprint, planReads } from './compiler';
export type { AskOptions, Compiled } from './compiler';
export { IntentCache } from './cache';
export type { IntentEntry, IntentBacking } from './cache';
export { ModelAdapter, schemaSummary } from './model';
export type { ModelConfig } from './model';
export type { ValueSource } from './lexicon';
