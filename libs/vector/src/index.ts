export * from './metric';
export * from './ann';
export { VectorTable, chooseKind, EXACT_MAX, AUTO_IVFPQ_MIN, filterExact, filterExactMax, type TableSpec, type Match, type TopKOptions } from './table';
export { HNSW_DEFAULTS } from './hnsw';
export { IVF_DEFAULTS, IvfIndex } from './ivf';
export * from './validate';
export { readFvecs, readIvecs } from './fvecs';
export { rng } from './kmeans';
export { VectorParticipant, PARTICIPANT, rowVectorId, type PutEntry, type TopKRequest } from './participant';
