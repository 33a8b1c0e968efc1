/** What prompt optimization reads of one scored orchestration (built from its stored trace). */
export interface RolloutDigest {
  rolloutId: string;
  taskId: string;
  task: string;
  reference: string | null;
  reward: number | null;
  /** Verified correctness of the final answer (null: the task has no reference). */
  success: number | null;
  finalAnswer: string | null;
  /** The agent whose answer won (null: none). */
  winner: string | null;
  answers: DigestAnswer[];
  votes: DigestVote[];
  /** Judge reasons and other reward explanations worth showing the optimizer. */
  feedback: string[];
}

export interface DigestAnswer {
  agent: string;
  label: string;
  content: string;
  /** Its correctness against the reference (null: no reference). */
  quality: number | null;
}

export interface DigestVote {
  voter: string;
  /** The agent whose answer the vote went to. */
  target: string;
  targetLabel: string;
  reason: string;
  /** The correctness of the answer voted for (null: no reference). */
  targetQuality: number | null;
}

/**
 * A prompt being optimized: a prompt resource name, the agents whose system prompt it is, and whether it
 * is the presenter's prompt.
 */
export interface Component {
  name: string;
  agents: string[];
  presenter: boolean;
}

/** One candidate of a search: the prompt text per component, and where it came from. */
export interface Candidate {
  id: string;
  texts: Record<string, string>;
  parents: string[];
  /** The component a reflective mutation edited (null: the seed or a merge). */
  edited: string | null;
  critique: string | null;
}
