export { orchestrate, type OrchestrateInput } from './coordinator.js';
export { answerUse, delegationFromConfig } from './delegation.js';
export { DELEGATE, DELEGATE_TOOL } from './delegate-tool.js';
export { parseTextAction } from './text-protocol.js';
export { jaccard, wordSet } from './validate.js';
export { selectWinner } from './winner.js';
export * from './types.js';
export * from '../trace/payloads.js';
