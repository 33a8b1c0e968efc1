import { valueOf } from '../../evaluation/compare.js';
import type { LlmClient } from '../../llm/types.js';
import {
  adviceMessages,
  blame,
  commonAncestor,
  drawParent,
  meanScore,
  mergeTexts,
  paretoFront,
  parseAdvice,
  parseProposal,
  pickComponent,
  reflectionMessages,
  type Candidate,
  type Component,
  type RolloutDigest,
} from '../../prompt-opt/index.js';
import type { EvalResult, Store } from '../../store/index.js';
import { Rng } from '../../tasks/prng.js';
import { callOptimizer } from './optimizer.js';
import type { PromptOptState, CandidateRecord, ProposalRecord } from './state.js';

/** What the search needs from the stage: scoring, reading rollouts, making candidates, the optimizer. */
export interface SearchDeps {
  store: Store;
  state: PromptOptState;
  seed: number;
  rounds: number;
  minibatch: number;
  examples: number;
  mergeEvery: number;
  maxPromptChars: number;
  /** rewrite: the optimizer writes the whole prompt; advice: one sentence added to it. */
  edit: 'rewrite' | 'advice';
  optimizer: { client: LlmClient; model: string; maxTokens: number; temperature: number };
  /** Aborts on an interruption or the wall-time budget. */
  signal: AbortSignal;
  /** Aborts on an interruption only: the step in progress is not recorded and runs again on resume. */
  interrupted: AbortSignal;
  /** Scores a candidate on tasks (ids) × the run's seeds; null when the budget or time ran out first. */
  score(c: CandidateRecord, taskIds: readonly string[]): Promise<Map<string, EvalResult> | null>;
  digest(r: EvalResult): RolloutDigest | null;
  create(
    input: Omit<CandidateRecord, 'id' | 'setId' | 'prompts' | 'val'> & {
      texts: Record<string, string>;
      parentPrompts: Record<string, string>;
    },
  ): CandidateRecord;
  text(promptId: string): string;
  save(): void;
  onStep?(p: ProposalRecord, front: { best: string | null; bestMean: number; size: number }): void;
}

const value = (metric: PromptOptState['metric'], r: EvalResult) => valueOf(r, metric) ?? 0;

/** A candidate's validation scores (task × seed → the run's metric) from its results. */
export function valScores(
  metric: PromptOptState['metric'],
  results: ReadonlyMap<string, EvalResult>,
): Record<string, number> {
  return Object.fromEntries([...results].map(([k, r]) => [k, value(metric, r)]));
}

export function frontOf(state: PromptOptState) {
  const table = new Map(state.candidates.filter((c) => c.val).map((c) => [c.id, new Map(Object.entries(c.val!))]));
  const keys = [...new Set([...table.values()].flatMap((m) => [...m.keys()]))];
  const front = paretoFront(table, keys);
  return { front, table, bestMean: front.best ? meanScore(table.get(front.best)!.values()) : Number.NEGATIVE_INFINITY };
}

/** Reflective mutations and merges until the rounds or a budget end; every step is saved before the next. */
export async function search(d: SearchDeps): Promise<void> {
  const { state } = d;
  const comps: Component[] = state.components;
  const texts = (c: CandidateRecord) => Object.fromEntries(comps.map((k) => [k.name, d.text(c.prompts[k.name]!)]));
  const asCandidate = (c: CandidateRecord): Candidate => ({
    id: c.id,
    texts: texts(c),
    parents: c.parents,
    edited: c.edited,
    critique: c.critique,
  });
  const byId = (id: string) => state.candidates.find((c) => c.id === id)!;
  const textKey = (t: Record<string, string>) => JSON.stringify(comps.map((k) => t[k.name]));
  const valMean = (c: CandidateRecord) => meanScore(Object.values(c.val!));
  /** Front pairs whose merge is a team not validated yet (an ancestor and its descendant, or the same changes, give none). */
  const mergeable = (frontIds: string[]) => {
    const pool = new Map(state.candidates.map((c) => [c.id, asCandidate(c)]));
    const validated = new Set(state.candidates.filter((c) => c.val).map((c) => textKey(pool.get(c.id)!.texts)));
    return frontIds.flatMap((a, i) =>
      frontIds.slice(i + 1).flatMap((b) => {
        const anc = commonAncestor(pool, a, b);
        const texts = anc && mergeTexts(pool.get(a)!, pool.get(b)!, anc, valMean(byId(a)) >= valMean(byId(b)));
        return texts && !validated.has(textKey(texts)) ? [{ a, b, texts }] : [];
      }),
    );
  };
  while (state.step < d.rounds && !state.done) {
    if (d.interrupted.aborted) return;
    if (d.signal.aborted) {
      state.done = true;
      state.stopReason = 'wall-time budget spent';
      d.save();
      return;
    }
    const rng = Rng.fromKey(`apo:${d.seed}:${state.step}`);
    const { front, bestMean } = frontOf(state);
    const frontIds = [...front.wins.keys()];
    const pairs = d.mergeEvery > 0 && (state.step + 1) % d.mergeEvery === 0 ? mergeable(frontIds) : [];
    let p: ProposalRecord = pairs.length ? await mergeStep() : await reflectStep();
    // An interrupted step is dropped (it runs again on resume): what it could not finish is no budget's end.
    if (d.interrupted.aborted) return;
    if (p.outcome === 'budget') {
      if (d.signal.aborted) p = { ...p, detail: 'wall-time budget spent' };
      state.done = true;
      state.stopReason = p.detail;
    }
    if (d.signal.aborted && !state.done) {
      state.done = true;
      state.stopReason = 'wall-time budget spent';
    }
    state.proposals.push(p);
    state.step += 1;
    d.save();
    const after = frontOf(state);
    d.onStep?.(p, { best: after.front.best, bestMean: after.bestMean, size: after.front.wins.size });

    async function mergeStep(): Promise<ProposalRecord> {
      const { a, b, texts: merged } = pairs[rng.int(0, pairs.length - 1)]!;
      const base: ProposalRecord = {
        step: state.step,
        kind: 'merge',
        parents: [a, b],
        component: null,
        outcome: 'no_merge',
        detail: '',
        candidate: null,
        optimizerTokens: 0,
      };
      const child = d.create({
        parents: [a, b],
        edited: null,
        critique: `merge of ${a} and ${b}`,
        texts: merged,
        parentPrompts: byId(a).prompts,
      });
      return { ...base, ...(await validate(child)) };
    }

    async function reflectStep(): Promise<ProposalRecord> {
      const parent = byId(drawParent(front, rng));
      const mb = rng
        .shuffle([...(state.poolTasks.length >= d.minibatch ? state.poolTasks : state.valTasks)])
        .slice(0, d.minibatch);
      const base: ProposalRecord = {
        step: state.step,
        kind: 'reflect',
        parents: [parent.id],
        component: null,
        outcome: 'budget',
        detail: '',
        candidate: null,
        optimizerTokens: 0,
      };
      // No rollouts on a proposal the optimizer budget cannot pay for (the call needs at least its template and 64 tokens).
      if (state.budget.optimizerTokens - state.spent.optimizerTokens < 128 + Math.min(d.optimizer.maxTokens, 64))
        return { ...base, detail: 'optimizer token budget spent' };
      const parentScores = await d.score(parent, mb);
      if (!parentScores) return { ...base, detail: 'budget spent while scoring the parent on the minibatch' };
      const views = [...parentScores.values()].map((r) => ({ r, v: d.digest(r) })).filter((x) => x.v) as {
        r: EvalResult;
        v: RolloutDigest;
      }[];
      const blames = blame(
        comps,
        views.map((x) => x.v),
      );
      const component = pickComponent(blames, rng.next());
      const comp = comps.find((c) => c.name === component)!;
      const sorted = [...views].sort((x, y) => value(state.metric, x.r) - value(state.metric, y.r));
      const low = sorted.slice(0, d.examples);
      const high = sorted
        .slice(Math.max(low.length, sorted.length - d.examples))
        .filter((x) => value(state.metric, x.r) > value(state.metric, low.at(-1)!.r));
      const current = d.text(parent.prompts[component]!);
      const why = blames.find((b) => b.component === component)!;
      const advice = d.edit === 'advice';
      const messages = advice
        ? adviceMessages(
            comp,
            current,
            low.map((x) => x.v),
            high.map((x) => x.v),
          )
        : reflectionMessages(
            comp,
            current,
            why,
            low.map((x) => x.v),
            high.map((x) => x.v),
            d.maxPromptChars,
          );
      const withBlame = { ...base, component, blame: Object.fromEntries(blames.map((b) => [b.component, b.score])) };
      const spentBefore = state.spent.optimizerTokens;
      const call = await callOptimizer({
        ...d.optimizer,
        ...(advice ? { maxTokens: Math.min(d.optimizer.maxTokens, 128) } : {}),
        messages,
        seed: d.seed * 7919 + state.step,
        left: state.budget.optimizerTokens - state.spent.optimizerTokens,
        signal: d.signal,
        claim: (w) => {
          state.inFlightTokens = w;
          d.save();
        },
        settle: (used) => {
          state.inFlightTokens = 0;
          state.spent.optimizerTokens += used;
        },
      }).catch((err: unknown) => {
        // The wall-time budget ran out during the call (counted at its worst case); an interruption goes up.
        if (d.signal.aborted && !d.interrupted.aborted) return { wallTime: true as const };
        throw err;
      });
      if ('wallTime' in call)
        return {
          ...withBlame,
          optimizerTokens: state.spent.optimizerTokens - spentBefore,
          detail: 'wall-time budget spent',
        };
      if ('outOfBudget' in call) return { ...withBlame, detail: 'optimizer token budget spent' };
      const parsed = (advice ? parseAdvice : parseProposal)(call.content, current, d.maxPromptChars);
      const done = { ...withBlame, optimizerTokens: call.tokens };
      if ('refused' in parsed) return { ...done, outcome: 'refused', detail: parsed.refused };
      const proposed = { ...texts(parent), [component]: parsed.prompt };
      // A team already validated would only join the front again under another name.
      const known = state.candidates.find((c) => c.val && textKey(texts(c)) === textKey(proposed));
      if (known) return { ...done, outcome: 'refused', detail: `the same prompts as ${known.id}` };
      const child = d.create({
        parents: [parent.id],
        edited: component,
        critique: parsed.critique,
        texts: proposed,
        parentPrompts: parent.prompts,
      });
      const childScores = await d.score(child, mb);
      if (!childScores)
        return { ...done, candidate: child.id, detail: 'budget spent while scoring the child on the minibatch' };
      const [pm, cm] = [parentScores, childScores].map((scores) =>
        meanScore([...scores.values()].map((r) => value(state.metric, r))),
      ) as [number, number];
      const mbRecord = { ...done, candidate: child.id, minibatch: { parent: pm, child: cm } };
      if (!(cm > pm))
        return { ...mbRecord, outcome: 'rejected', detail: `minibatch ${cm.toFixed(3)} ≤ parent ${pm.toFixed(3)}` };
      return { ...mbRecord, ...(await validate(child)) };
    }

    async function validate(child: CandidateRecord): Promise<Pick<ProposalRecord, 'outcome' | 'detail' | 'candidate'>> {
      const scores = await d.score(child, state.valTasks);
      if (!scores)
        return { outcome: 'budget', detail: 'budget spent while scoring on the validation batch', candidate: child.id };
      child.val = valScores(state.metric, scores);
      const m = meanScore(Object.values(child.val));
      return {
        outcome: 'accepted',
        detail: `validation ${m.toFixed(3)} (best before ${bestMean.toFixed(3)})`,
        candidate: child.id,
      };
    }
  }
}
