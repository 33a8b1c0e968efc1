import type { CancelPayload, DropPayload, NewAnswerPayload, RoundPayload, VotePayload } from '../trace/payloads.js';
import { finalAnswerOf, sameFinalAnswer } from './answers-layout.js';
import { usesAnswersLayout } from './prompts.js';
import { runTurn, type TurnOutcome } from './turn.js';
import type {
  Action,
  OrchestrationResult,
  OrchestratorConfig,
  StopPolicy,
  TeamAgent,
  ToolRunner,
  TraceSink,
} from './types.js';

// Abort reasons, made once: an Error per cancel captures an (async) stack trace nobody reads, since a
// cancelled call is recorded as cancelled, not by its error.
const CANCELLED: Record<CancelPayload['reason'], Error> = {
  superseded: new Error('superseded by a new answer'),
  total_timeout: new Error('total timeout'),
  interrupted: new Error('interrupted'),
};

export interface Settled {
  agent: TeamAgent;
  outcome: TurnOutcome;
  version: number;
  round: number;
  turnId: string;
  /** An agent's first turn in the answers layout: shown no answers, never superseded (see start). */
  independent: boolean;
}

interface Running {
  promise: Promise<Settled>;
  controller: AbortController;
  round: number;
  turnId: string;
  independent: boolean;
}

export interface AttemptInput {
  task: string;
  team: TeamAgent[];
  config: OrchestratorConfig;
  sink: TraceSink;
  tools: ToolRunner;
  /** Asked at the end of each round; absent, coordination ends as MassGen's protocol says. */
  stopPolicy?: StopPolicy;
}

/**
 * One attempt of the team (a restart begins another): turns run until every live agent holds a vote for
 * the current answer set, or the orchestration stops. Per-turn work is split into small methods, which
 * V8 optimizes quickly; a fast server makes that compile time a real share of a run's CPU.
 */
export class Attempt {
  readonly answers = new Map<string, { content: string; round: number; seq: number }>();
  readonly votes = new Map<string, { target: string; reason: string; round: number; seq: number; repeats?: boolean }>();
  /** Sequence number of the current round span. */
  seq: number;
  private readonly dropped = new Set<string>();
  private readonly answerCounts = new Map<string, number>();
  private readonly running = new Map<string, Running>();
  /** Agents whose first turn of this attempt has settled. */
  private readonly acted = new Set<string>();
  private version = 0;
  private stopped = false;

  constructor(
    private readonly input: AttemptInput,
    private readonly result: OrchestrationResult,
    private readonly abandoned: Promise<Settled>[],
    public turnCounter: number,
    restart: boolean,
  ) {
    this.seq = this.openRound([], restart ? 'restart' : 'start');
  }

  async run(stop: AbortSignal): Promise<void> {
    while (!stop.aborted && !this.stopped) {
      const agents = this.live();
      if (!agents.length || agents.every((a) => this.votes.has(a.id))) return;
      for (const agent of agents) if (!this.votes.has(agent.id) && !this.running.has(agent.id)) this.start(agent);
      const settled = await Promise.race(Array.from(this.running.values(), (r) => r.promise));
      if (stop.aborted) return;
      this.settle(settled);
    }
  }

  live(): TeamAgent[] {
    return this.input.team.filter((a) => !this.dropped.has(a.id));
  }

  /** The orchestration stops: every running turn's calls are aborted (cancelAll then records them). */
  abortAll(reason: unknown): void {
    for (const r of this.running.values()) r.controller.abort(reason);
  }

  cancelAll(reason: CancelPayload['reason'], keepIndependent = false): void {
    for (const [agentId, r] of [...this.running]) if (!(keepIndependent && r.independent)) this.cancel(agentId, reason);
  }

  private start(agent: TeamAgent): void {
    const { input, result } = this;
    const controller = new AbortController();
    const turnId = `t${++this.turnCounter}`;
    const version = this.version;
    const round = result.rounds;
    // In the answers layout every agent's first answer is its own: a small team's value is agreement between
    // independent samples, which a first turn that saw (and copied) another's answer would not be.
    const independent =
      usesAnswersLayout(agent, input.config.prompt_layout)
      && (input.config.prompt_layout === 'independent' || !this.acted.has(agent.id));
    const snapshot = {
      answers: independent ? new Map<string, string>() : this.answerView(),
      canAnswer: this.canAnswer(agent),
    };
    const promise = runTurn({
      agent,
      task: input.task,
      snapshot,
      teamSize: input.team.length,
      config: input.config,
      sink: input.sink,
      tools: input.tools,
      usage: result.usage,
      toolLog: result.toolCalls,
      round,
      roundSeq: this.seq,
      turnId,
      controller,
    }).then((outcome): Settled => ({ agent, outcome, version, round, turnId, independent }));
    this.running.set(agent.id, { controller, round, turnId, promise, independent });
  }

  private settle(settled: Settled): void {
    const current = this.running.get(settled.agent.id);
    if (!current || current.turnId !== settled.turnId) return; // cancelled and already replaced
    this.running.delete(settled.agent.id);
    const { outcome } = settled;
    if (outcome.kind === 'cancelled' || (settled.version !== this.version && !settled.independent)) return;
    this.acted.add(settled.agent.id);
    if (outcome.kind === 'drop') this.drop(settled.agent, outcome.dropKind, outcome.reason);
    else if (outcome.action.kind === 'vote') this.vote(settled, outcome.action, outcome.promptSeq);
    else {
      // An independent answer that others reached meanwhile counts as a vote for the first of them.
      const same = settled.independent ? this.holderOfSameAnswer(outcome.action.content) : undefined;
      if (same)
        this.vote(
          settled,
          {
            kind: 'vote',
            target: same,
            reason: `same final answer: ${finalAnswerOf(outcome.action.content)}`,
            implicit: true,
            repeats: true,
          },
          outcome.promptSeq,
        );
      else this.answer(settled, outcome.action, outcome.promptSeq);
    }
  }

  private holderOfSameAnswer(content: string): string | undefined {
    return this.input.team.find(
      (a) => this.answers.has(a.id) && sameFinalAnswer(content, this.answers.get(a.id)!.content),
    )?.label;
  }

  private vote(
    { agent, turnId }: Pick<Settled, 'agent' | 'turnId'>,
    action: Extract<Action, { kind: 'vote' }>,
    promptSeq: number,
  ): void {
    const target = this.input.team.find((a) => a.label === action.target)!;
    const round = this.result.rounds;
    const payload: VotePayload = {
      turn_id: turnId,
      voter_label: agent.label,
      target_label: target.label,
      target_agent: target.id,
      reason: action.reason,
      round,
      answer_labels_seen: this.labels(),
      prompt_seq: promptSeq,
      ...(action.implicit ? { implicit: true } : {}),
      ...(action.repeats ? { repeats: true } : {}),
    };
    const seq = this.input.sink.span({
      type: 'coordination',
      name: 'vote',
      agent: agent.id,
      parentSeq: this.seq,
      payload,
    });
    this.votes.set(agent.id, {
      target: target.id,
      reason: payload.reason,
      round,
      seq,
      ...(action.repeats ? { repeats: true } : {}),
    });
  }

  private answer({ agent, turnId }: Settled, action: Extract<Action, { kind: 'answer' }>, promptSeq: number): void {
    const { result } = this;
    const { content } = action;
    const round = result.rounds;
    const payload: NewAnswerPayload = {
      turn_id: turnId,
      label: agent.label,
      content,
      round,
      answer_labels_seen: this.labels(),
      prompt_seq: promptSeq,
      ...(action.implicit ? { implicit: true } : {}),
    };
    const seq = this.input.sink.span({
      type: 'coordination',
      name: 'new_answer',
      agent: agent.id,
      parentSeq: this.seq,
      payload,
    });
    this.answers.set(agent.id, { content, round, seq });
    this.answerCounts.set(agent.id, (this.answerCounts.get(agent.id) ?? 0) + 1);
    result.answers.push({ agent: agent.id, label: agent.label, content, round, seq });
    if (this.input.config.prompt_layout === 'independent' && agent.toolMode === 'text') {
      // One round of independent answers: an answer is its author's vote, and the answers stand together.
      this.vote(
        { agent, turnId },
        { kind: 'vote', target: agent.label, reason: 'own answer (independent layout)', implicit: true },
        promptSeq,
      );
      return;
    }
    if (this.policyStops()) return;
    this.version++;
    this.votes.clear();
    this.cancelAll('superseded', true);
    this.seq = this.openRound(this.labels(), 'new_answer');
  }

  /** A stop policy's decision at the end of a round; stopping keeps the votes, so the round's leader is presented. */
  private policyStops(): boolean {
    const { stopPolicy, team, config, sink } = this.input;
    if (!stopPolicy) return false;
    const holders = team.filter((a) => this.answers.has(a.id));
    const decision = stopPolicy({
      round: this.result.rounds,
      maxRounds: config.max_rounds,
      teamSize: team.length,
      liveAgents: this.live().length,
      answers: holders.map((a) => this.answers.get(a.id)!.content),
      voteCounts: holders.map((a) => [...this.votes.values()].filter((v) => v.target === a.id).length),
      tokens: this.result.usage.totalTokens,
    });
    if (!decision) return false;
    sink.span({
      type: 'coordination',
      name: 'policy_decision',
      agent: null,
      parentSeq: this.seq,
      payload: decision.payload,
    });
    if (!decision.stop) return false;
    this.stopped = true;
    this.result.stoppedAfterRound = this.result.rounds;
    return true;
  }

  private drop(agent: TeamAgent, kind: DropPayload['kind'], reason: string): void {
    this.dropped.add(agent.id);
    this.result.dropped.push({ agent: agent.id, kind, reason });
    this.input.sink.span({
      type: 'coordination',
      name: 'drop',
      agent: agent.id,
      parentSeq: this.seq,
      payload: { kind, reason, round: this.result.rounds } satisfies DropPayload,
    });
  }

  private cancel(agentId: string, reason: CancelPayload['reason']): void {
    const r = this.running.get(agentId);
    if (!r) return;
    r.controller.abort(CANCELLED[reason]);
    this.running.delete(agentId);
    this.abandoned.push(r.promise);
    this.input.sink.span({
      type: 'coordination',
      name: 'cancel',
      agent: agentId,
      parentSeq: this.seq,
      payload: { turn_id: r.turnId, round: r.round, reason } satisfies CancelPayload,
    });
  }

  /** Label → content of the current answers, in registration order: what a new turn is shown. */
  private answerView(): Map<string, string> {
    const view = new Map<string, string>();
    for (const a of this.input.team) {
      const answer = this.answers.get(a.id);
      if (answer) view.set(a.label, answer.content);
    }
    return view;
  }

  private labels(): string[] {
    return this.input.team.filter((a) => this.answers.has(a.id)).map((a) => a.label);
  }

  private canAnswer(agent: TeamAgent): boolean {
    const { config } = this.input;
    return (
      this.result.rounds < config.max_rounds
      && (config.max_new_answers_per_agent === undefined
        || (this.answerCounts.get(agent.id) ?? 0) < config.max_new_answers_per_agent)
    );
  }

  private openRound(labels: string[], trigger: RoundPayload['trigger']): number {
    return this.input.sink.span({
      type: 'coordination',
      name: 'round',
      agent: null,
      payload: { round: ++this.result.rounds, answer_labels: labels, trigger } satisfies RoundPayload,
    });
  }
}
