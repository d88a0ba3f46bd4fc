export * from './analysis';
export * from './query-parser';
export * from './codec';
export * from './similarity';
export { FieldIndex, PostingList } from './field-index';
export { Scorer, TermScorer, ListScorer, NO_MORE } from './scorer';
export { topK, collectorTuning, type Hit, type CollectStats } from './collector';
export * from './query';
export * from './participant';
