import type { RolloutSummary } from '../../rollouts/rollout.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { Store } from '../../store/index.js';
import { heldOutRollout } from '../../trace/held-out.js';
import type { Rollout } from '../../trace/records.js';
import { syncProduction } from '../production-sync.js';
import { copyCaptured, taken, trainingCopyId } from './captured-copy.js';
import { CapturedPeers } from './captured-peers.js';
import { capturedFamilies, keyedTurns, scoreCaptured } from './captured-score.js';
import type { CapturedCounts, CollectOptions, CollectSummary } from './types.js';

export type { CapturedCounts } from './types.js';

/**
 * Sessions finished this long before a run may still be committing (the gateway writes in batches):
 * the next run looks back this far again; ones taken already are skipped.
 */
export const WATERMARK_GRACE_MS = 60_000;

/**
 * The collect stage on captured traffic: no orchestrations. The gateway sessions that finished since the
 * watermark, or got a reward since (feedback on one that was waiting), less those taken already and the
 * held-out share; those without a reward are scored by the label-free families that have a weight (the judge,
 * agreement with the other sessions' completions of the same prompt, rewards.custom; captured-score.ts), else
 * left waiting.
 * Each taken session is copied into a rollout of this collect run (captured-copy.ts), so the train stage
 * reads it exactly as it reads orchestrated rollouts. The watermark is the run's own, advanced only when
 * it completes.
 */
export async function collectCaptured(rt: Runtime, opts: CollectOptions = {}): Promise<CollectSummary> {
  const store = rt.store();
  rt.followTelemetry(opts.onStage);
  const production = syncProduction(rt, opts.trigger ?? 'collect');
  const started = performance.now();
  const since = lastWatermark(store);
  const cutoff = Date.now();
  const judge = await rt.judge();
  const families = capturedFamilies(rt.config.rewards, judge);
  const scorers = Object.keys(families).length > 0;
  const runId = await store.write(() =>
    store.collectRuns.start({ source: 'gateway', since }, { config_hash: rt.loaded.hash }),
  );
  const counts: CapturedCounts = {
    since,
    watermark: cutoff - WATERMARK_GRACE_MS,
    taken: 0,
    heldOut: 0,
    joined: 0,
    waiting: 0,
    noMajority: 0,
    scored: 0,
    rewarded: 0,
  };
  const done: RolloutSummary[] = [];
  try {
    const sessions = store.rollouts.capturedSince(since ?? -1).filter((r) => {
      if (taken(store, r.id)) return false;
      if (typeof r.metadata.joined_into === 'string') return (counts.joined++, false);
      if (heldOutRollout(r.id, rt.config.gateway.holdout)) return (counts.heldOut++, false);
      return true;
    });
    const peers = new CapturedPeers();
    if (families.agreement) for (const r of sessions) peers.add(r.id, keyedTurns(store, r.id).turns);
    for (const r of sessions) {
      opts.signal?.throwIfAborted();
      let total = r.totalReward;
      if (total === null) {
        if (!scorers) {
          counts.waiting++;
          continue;
        }
        total = await scoreCaptured(store, r, rt.config.rewards, families, judge, peers, opts.signal);
        if (total === null) {
          counts.noMajority++;
          continue;
        }
        counts.scored++;
      } else counts.rewarded++;
      const scored: Rollout = { ...r, totalReward: total };
      await store.write(() => store.transaction(() => copyCaptured(store, scored, runId)));
      counts.taken++;
      done.push(summaryOf(scored));
    }
  } catch (err) {
    await store.write(() => store.collectRuns.finish(runId, 'failed', { captured: counts }, String(err)));
    throw err;
  }
  opts.onStage?.(counts.taken ? describeCaptured(counts) : nothingTaken(counts));
  const summary = captureSummary(runId, counts, done, performance.now() - started, production);
  await store.write(() => store.collectRuns.finish(runId, 'completed', { ...summary, rollouts: undefined }));
  return summary;
}

/** Where the last completed gateway collect left off; null before the first. */
function lastWatermark(store: Store): number | null {
  const w = store.collectRuns.latestWhere('source', 'gateway')?.result?.captured;
  const mark = (w as Partial<CapturedCounts> | undefined)?.watermark;
  return typeof mark === 'number' ? mark : null;
}

/** One line of what a gateway collect did. */
export function describeCaptured(c: CapturedCounts): string {
  return (
    `took ${c.taken} captured session(s) (${c.scored} scored by the judge, agreement or rewards.custom, `
    + `${c.rewarded} already rewarded); ${c.heldOut} held out, ${c.joined} joined into MassGen imports, `
    + `${c.waiting} waiting for a reward${noMajority(c)}`
  );
}

/** Why a gateway collect took nothing, with what to do. */
export function nothingTaken(c: CapturedCounts): string {
  const looked = c.heldOut + c.joined + c.waiting;
  if (!looked) {
    const since = c.since === null ? '' : ' since the last collect';
    const hint = 'capture traffic with `massgen-rl gateway`';
    return `no captured gateway session finished${since}: nothing to train on (${hint})`;
  }
  return (
    `no captured session taken: ${c.heldOut} held out (gateway.holdout), ${c.joined} joined into MassGen imports, `
    + `${c.waiting} waiting for a reward${noMajority(c)} `
    + '(send feedback, or give the judge (rewards.judge.model), agreement or rewards.custom a weight)'
  );
}

function noMajority(c: CapturedCounts): string {
  return c.noMajority ? `, ${c.noMajority} without a majority among their prompt's samples (rewards.agreement)` : '';
}

function summaryOf(r: Rollout): RolloutSummary {
  return {
    id: trainingCopyId(r.id),
    taskId: '',
    status: 'completed',
    reward: r.totalReward,
    quality: null,
    checked: null,
    winner: null,
    consensus: false,
    rounds: 0,
    tokens: r.tokens,
    wallMs: r.wallMs,
  };
}

function captureSummary(
  runId: string,
  captured: CapturedCounts,
  rollouts: RolloutSummary[],
  wallMs: number,
  production: { id: string; version: number },
): CollectSummary {
  const rewards = rollouts.map((r) => r.reward).filter((x): x is number => x !== null);
  return {
    runId,
    status: 'completed',
    tasks: rollouts.length,
    completed: rollouts.length,
    failed: 0,
    cancelled: 0,
    successRate: rollouts.length ? 1 : 0,
    correctRate: null,
    meanReward: rewards.length ? rewards.reduce((a, b) => a + b, 0) / rewards.length : null,
    consensusRate: null,
    meanRounds: null,
    tokens: rollouts.reduce((a, r) => a + r.tokens, 0),
    wallMs,
    resourceSet: { id: production.id, version: production.version },
    canary: null,
    failureReasons: [],
    shortfall: null,
    source: 'gateway',
    captured,
    rollouts,
  };
}
