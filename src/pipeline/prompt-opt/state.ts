/** One candidate of a run, as the run's state keeps it (its texts live in its prompt resources). */
export interface CandidateRecord {
  id: string;
  setId: string;
  /** Prompt resource id per component. */
  prompts: Record<string, string>;
  parents: string[];
  edited: string | null;
  critique: string | null;
  /** On the validation batch: a score per task×seed key (absent: not accepted onto the front). */
  val?: Record<string, number>;
}

export type ProposalOutcome = 'accepted' | 'rejected' | 'refused' | 'no_merge' | 'budget' | 'failed';

export interface ProposalRecord {
  step: number;
  kind: 'reflect' | 'merge';
  parents: string[];
  component: string | null;
  outcome: ProposalOutcome;
  detail: string;
  candidate: string | null;
  /** Minibatch means of the parent and the child (reflective mutations). */
  minibatch?: { parent: number; child: number | null };
  blame?: Record<string, number>;
  optimizerTokens: number;
}

/** The whole resumable state of a prompt-optimization run, saved as its training run's detail after every step. */
export interface PromptOptState {
  /** The stored name of prompt-optimization runs (stores written before the rename resume by it). */
  algo: 'apo';
  components: { name: string; agents: string[]; presenter: boolean }[];
  baseSet: string;
  evalRunId: string;
  valTasks: string[];
  poolTasks: string[];
  seeds: number[];
  metric: 'reward' | 'success';
  step: number;
  candidates: CandidateRecord[];
  proposals: ProposalRecord[];
  spent: { optimizerTokens: number; wallMs: number };
  /** An optimizer call's worst case, claimed before it is made: counted if the process dies during the call. */
  inFlightTokens: number;
  budget: { rollouts: number; optimizerTokens: number; wallMs: number };
  done: boolean;
  stopReason: string | null;
}
