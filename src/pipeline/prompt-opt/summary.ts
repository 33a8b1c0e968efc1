import { meanScore, type Front } from '../../prompt-opt/index.js';
import type { Store } from '../../store/index.js';
import type { PromptOptState, ProposalRecord } from './state.js';

export interface PromptOptCandidate {
  id: string;
  parents: string[];
  edited: string | null;
  /** Mean on the validation batch (null: not accepted onto the front). */
  valMean: number | null;
  onFront: boolean;
  prompts: { name: string; version: number }[];
}

export interface PromptOptResult {
  runId: string;
  algo: 'apo';
  status: 'completed' | 'cancelled';
  stopReason: string | null;
  metric: PromptOptState['metric'];
  /** The best candidate's set for `eval` and `deploy` (null: nothing beat the current prompts). */
  candidateSet: { id: string; version: number } | null;
  best: PromptOptCandidate | null;
  baselineMean: number | null;
  candidates: PromptOptCandidate[];
  proposals: ProposalRecord[];
  spent: { rollouts: number; optimizerTokens: number; wallMs: number };
  budget: PromptOptState['budget'];
}

/**
 * The run's outcome: every candidate with its validation mean; when completed, the new prompt versions
 * annotated with their scores per task and the run finished with the best set as its candidate.
 */
export function summarize(
  store: Store,
  runId: string,
  state: PromptOptState,
  f: { front: Front },
  spent: PromptOptResult['spent'],
  status: PromptOptResult['status'],
): PromptOptResult {
  const mean = (val: Record<string, number> | undefined) => (val ? meanScore(Object.values(val)) : null);
  const candidates = state.candidates.map((c) => ({
    id: c.id,
    parents: c.parents,
    edited: c.edited,
    valMean: mean(c.val),
    onFront: f.front.wins.has(c.id),
    prompts: Object.values(c.prompts)
      .map((id) => store.resources.get(id)!)
      .map((r) => ({ name: r.name, version: r.version })),
  }));
  const bestId = f.front.best;
  const best = candidates.find((c) => c.id === bestId) ?? null;
  const seed = candidates[0];
  const improved = best !== null && best.id !== 'c0' && (best.valMean ?? -Infinity) > (seed?.valMean ?? -Infinity);
  const set = improved ? store.sets.get(state.candidates.find((c) => c.id === bestId)!.setId)! : null;
  const result: PromptOptResult = {
    runId,
    algo: 'apo',
    status,
    stopReason: state.stopReason,
    metric: state.metric,
    candidateSet: set ? { id: set.id, version: set.version } : null,
    best,
    baselineMean: seed?.valMean ?? null,
    candidates,
    proposals: state.proposals,
    spent,
    budget: state.budget,
  };
  if (status !== 'completed') return result;
  store.transaction(() => {
    for (const c of state.candidates.filter((x) => x.val)) {
      for (const id of new Set(Object.values(c.prompts))) {
        const r = store.resources.get(id)!;
        if (r.metadata.apo_candidate === c.id)
          store.resources.annotate(id, {
            val_scores: c.val,
            val_mean: mean(c.val),
            on_front: f.front.wins.has(c.id),
            chosen: c.id === bestId && improved,
          });
      }
    }
    store.evaluations.finishRun(state.evalRunId, 'completed', { apo_run: runId });
    store.trainingRuns.finish(runId, 'completed', {
      algo: 'apo',
      candidate_set: set?.id ?? null,
      best: bestId,
      best_mean: best?.valMean ?? null,
      baseline_mean: result.baselineMean,
      candidates: candidates.length,
      proposals: state.proposals.length,
      spent,
      stop_reason: state.stopReason,
    });
  });
  return result;
}
