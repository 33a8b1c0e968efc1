import type { Recipe, RoleConfig } from '../../config/schema.js';
import { InterruptedError, isSkip } from '../../errors.js';
import type { Runtime } from '../../runtime/runtime.js';
import { trainPrompts } from '../prompt-opt/train-prompts.js';
import { trainPolicy } from './policy.js';
import type { TrainResult } from './train.js';

export interface RoleTrained {
  role: string;
  algo: string;
  /** The weight line a weight recipe trains (null: bandit and apo train no weights). */
  line: string | null;
  status: 'trained' | 'skipped';
  /** Why a role was not trained: its data failed its gates, it had none, or nothing beat production. */
  reason?: string;
  /** A trained role's run (a weight recipe's or apo's), its checkpoint and the weight resource it registered. */
  trainingRunId?: string;
  checkpointId?: string;
  weightId?: string;
  /** A weight run's result when it ran now (a run reused from an interrupted cycle has none). */
  result?: TrainResult;
  /** Recipe bandit: the policy learned per decision. */
  policies?: Record<string, string>;
  /** Recipe apo: the set whose prompts for the role's agents won the search. */
  promptSet?: string;
  /** What a bandit or apo role learned, for people. */
  learned?: string;
}

/** What the learners need of the cycle: its progress notes and its interruption. */
interface LearnOptions {
  onStage?: (message: string) => void;
  signal?: AbortSignal;
}

type BanditRecipe = Extract<Recipe, { algo: 'bandit' }>;
type ApoRecipe = Extract<Recipe, { algo: 'apo' }>;

/**
 * A role with recipe bandit: each of its decisions' policy fitted on the logged decisions (`train policy`'s learner)
 * with the recipe's settings; a decision without enough data is left out with the reason, the role skipped when
 * every one is.
 */
export async function trainBanditRole(
  rt: Runtime,
  name: string,
  role: RoleConfig,
  opts: LearnOptions,
): Promise<RoleTrained> {
  const { algo, ...settings } = role.recipe as BanditRecipe;
  const out = { role: name, algo, line: null };
  const policies: Record<string, string> = {};
  const learned: string[] = [];
  const left: string[] = [];
  for (const kind of role.policies) {
    opts.onStage?.(`role ${name}: bandit on the ${kind} decisions`);
    try {
      const r = await trainPolicy(rt, {
        policy: kind,
        settings,
        settingsField: `roles.${name}.recipe`,
        onStage: opts.onStage,
      });
      policies[kind] = r.policy.id;
      learned.push(`policy ${kind} v${r.policy.version}`);
    } catch (err) {
      if (!isSkip(err)) throw err;
      left.push(`${kind}: ${err.message}`);
    }
  }
  if (!learned.length) return { ...out, status: 'skipped', reason: left.join('; ') };
  const note = left.length ? ` (not ${left.join('; ')})` : '';
  return { ...out, status: 'trained', policies, learned: learned.join(', ') + note };
}

/**
 * A role with recipe apo: the system prompts of its agents optimized together (`train prompts`' search) with the
 * recipe's settings; the role is skipped when no candidate beat production's prompts.
 */
export async function trainApoRole(
  rt: Runtime,
  name: string,
  role: RoleConfig,
  opts: LearnOptions,
): Promise<RoleTrained> {
  const { algo, ...settings } = role.recipe as ApoRecipe;
  const out = { role: name, algo, line: null };
  const prompts = [...new Set(rt.config.agents.filter((a) => role.agents.includes(a.id)).map((a) => a.system_prompt))];
  opts.onStage?.(`role ${name}: prompt optimization of ${prompts.join(', ')}`);
  let r;
  try {
    r = await trainPrompts(rt, { settings: { ...settings, prompts }, signal: opts.signal, onStage: opts.onStage });
  } catch (err) {
    if (!isSkip(err)) throw err;
    return { ...out, status: 'skipped', reason: err.message };
  }
  if (r.status === 'cancelled') throw new InterruptedError(`role ${name}: prompt optimization interrupted`);
  if (!r.candidateSet)
    return {
      ...out,
      status: 'skipped',
      trainingRunId: r.runId,
      reason: `no prompts beat production's (${r.stopReason ?? 'the search ended'})`,
    };
  return {
    ...out,
    status: 'trained',
    trainingRunId: r.runId,
    promptSet: r.candidateSet.id,
    learned: `prompts of set v${r.candidateSet.version}`,
  };
}
