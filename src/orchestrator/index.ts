export { orchestrate, type OrchestrateInput } from './coordinator.js';
export { parseTextAction } from './text-protocol.js';
export { jaccard, wordSet } from './validate.js';
export { selectWinner } from './winner.js';
export * from './types.js';
export * from '../trace/payloads.js';
