export type { Candidate, Component, RolloutDigest, DigestAnswer, DigestVote } from './types.js';
export { drawParent, meanScore, paretoFront, type Front, type ScoreTable } from './pareto.js';
export { blame, pickComponent, type Blame } from './credit.js';
export {
  adviceMessages,
  describeRollout,
  parseAdvice,
  parseProposal,
  reflectionMessages,
  type ChatTurn,
  type Proposal,
  type ProposalRefusal,
} from './reflect.js';
export { commonAncestor, mergeTexts } from './merge.js';
