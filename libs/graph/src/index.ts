export { GraphIndex, MAX_DEPTH, DEFAULT_DEPTH, checkReverse, type ResolvedRelation } from './graph-index';
export { Adjacency, MIN_MERGE, edgeWeights, type EdgeInput } from './adjacency';
export { NodeTable } from './node-table';
export { bfs, shortestPath, dijkstra, type Visit, type DijkstraResult, type WeightFn } from './traverse';
export { nodeOf, nodeOfValue, tupleOfNode } from './node';
export { edgesOfRow, edgeWrites, forwardKey, reverseKey, decodeEdgeValue, ownerImplied, type Edge } from './edges';
export { walk, walkNames, type WalkResult, type WalkOptions, type WalkDirection } from './walk';
