import { REFERENCE_VERIFYING } from '../config/sections/rewards.js';
import type { Db } from './database.js';
import type { Redactor } from './redact.js';
import { sqlFamilies } from './sql.js';
import type { Reward, RewardInput } from './types.js';

interface RewardRaw {
  id: number;
  rollout_id: string;
  channel: string;
  family: string;
  value: number;
  reason: string | null;
  agent: string | null;
  target_seq: number | null;
  created_at: number;
}

export class RewardRepository {
  private readonly insertAll: (rolloutId: string, rewards: readonly RewardInput[]) => void;

  constructor(
    private readonly db: Db,
    private readonly redactor: Redactor,
  ) {
    const insert =
      db.prepare(`INSERT INTO rewards (rollout_id, channel, family, value, reason, agent, target_seq, created_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
    this.insertAll = (rolloutId: string, rewards: readonly RewardInput[]) => {
      const now = Date.now();
      for (const r of rewards) {
        if (!Number.isFinite(r.value))
          throw new Error(`reward ${r.family}/${r.channel} is not a finite number: ${r.value}`);
        insert.run(
          rolloutId,
          r.channel,
          r.family,
          r.value,
          this.redactor.scrubOptional(r.reason),
          r.agent ?? null,
          r.targetSeq ?? null,
          now,
        );
      }
    };
  }

  add(rolloutId: string, rewards: readonly RewardInput[]): void {
    this.db.append(() => this.insertAll(rolloutId, rewards));
  }

  /**
   * Deletes a rollout's computed rewards and their reward spans, keeping human feedback, before they
   * are computed again; run it in the caller's transaction, with the writes that replace them.
   */
  removeComputed(rolloutId: string): void {
    this.db.prepare("DELETE FROM rewards WHERE rollout_id = ? AND family <> 'human'").run(rolloutId);
    this.db.prepare("DELETE FROM spans WHERE rollout_id = ? AND type = 'reward' AND name <> 'human'").run(rolloutId);
  }

  list(rolloutId: string): Reward[] {
    return (
      this.db.prepare('SELECT * FROM rewards WHERE rollout_id = ? ORDER BY id').all(rolloutId) as RewardRaw[]
    ).map(toReward);
  }

  /**
   * Per task, the answers a resource set's completed rollouts gave (every agent's, every round: the `turn`
   * channel) that a verifying family (exact or numeric; `families` when given: config verifyingFamilies) scored,
   * and how many of them it scored right.
   */
  answerVerdicts(setId: string, families: readonly string[] = REFERENCE_VERIFYING): AnswerVerdicts[] {
    const where = "AND w.channel = 'turn' AND r.resource_set_id = ? AND r.task_id IS NOT NULL";
    const answers = verdicts(where, families);
    const rows = this.db
      .prepare(
        `SELECT task_id, COUNT(*) AS answers, SUM(CASE WHEN verdict >= 1 THEN 1 ELSE 0 END) AS right_answers
        FROM (${answers}) a GROUP BY task_id ORDER BY task_id`,
      )
      .all(setId) as { task_id: string; answers: number | string; right_answers: number | string }[];
    return rows.map((r) => ({ taskId: r.task_id, answers: Number(r.answers), right: Number(r.right_answers) }));
  }

  /**
   * Every reward of another family on an answer the exact or numeric family verified: on the turn channel the same
   * answer (rollout and target span), on the rollout channel the final answer. `labelled`: the verified answers per
   * channel, what a family's coverage is counted against. Completed rollouts only.
   */
  verifiedScores(): { scores: VerifiedScore[]; labelled: Record<'turn' | 'rollout', number> } {
    const verified = verdicts();
    const rows = this.db
      .prepare(
        `SELECT f.family AS family, f.channel AS channel, f.value AS value, v.verdict AS verdict,
          v.rollout_id AS rollout_id, v.seq AS seq
        FROM rewards f JOIN (${verified}) v ON v.rollout_id = f.rollout_id AND v.channel = f.channel
          AND v.seq = COALESCE(f.target_seq, -1)
        WHERE f.family NOT IN ${sqlFamilies(REFERENCE_VERIFYING)}
        ORDER BY f.id`,
      )
      .all() as {
      family: string;
      channel: 'turn' | 'rollout';
      value: number;
      verdict: number;
      rollout_id: string;
      seq: number | string;
    }[];
    const counts = this.db.prepare(`SELECT channel, COUNT(*) AS n FROM (${verified}) v GROUP BY channel`).all() as {
      channel: string;
      n: number | string;
    }[];
    const labelled = { turn: 0, rollout: 0 };
    for (const c of counts) if (c.channel === 'turn' || c.channel === 'rollout') labelled[c.channel] = Number(c.n);
    const scores = rows.map((r) => ({
      family: r.family,
      channel: r.channel,
      value: r.value,
      right: r.verdict >= 1,
      answer: `${r.rollout_id}:${Number(r.seq)}`,
    }));
    return { scores, labelled };
  }
}

/**
 * Each verified answer of a completed rollout once, with its task: the best verdict of the verifying families per
 * rollout, channel (`turn`: every answer; `rollout`: the final answer) and target span (-1 for the final answer).
 * `where` narrows it (SQL on `w`, the reward, and `r`, the rollout).
 */
function verdicts(where = '', families: readonly string[] = REFERENCE_VERIFYING): string {
  return `SELECT w.rollout_id, r.task_id, w.channel, COALESCE(w.target_seq, -1) AS seq, MAX(w.value) AS verdict
    FROM rewards w JOIN rollouts r ON r.id = w.rollout_id
    WHERE r.status = 'completed' AND w.family IN ${sqlFamilies(families)} AND w.channel IN ('turn', 'rollout') ${where}
    GROUP BY w.rollout_id, r.task_id, w.channel, COALESCE(w.target_seq, -1)`;
}

/** A reward of a family other than exact and numeric on an answer that one of them verified. */
export interface VerifiedScore {
  family: string;
  channel: 'turn' | 'rollout';
  value: number;
  right: boolean;
  /** Which answer: its rollout and span (-1: the final answer); families scoring the same answer share it. */
  answer: string;
}

/** One task's scored answers from one resource set. */
export interface AnswerVerdicts {
  taskId: string;
  answers: number;
  right: number;
}

export function toReward(r: RewardRaw): Reward {
  return {
    id: r.id,
    rolloutId: r.rollout_id,
    channel: r.channel,
    family: r.family,
    value: r.value,
    reason: r.reason,
    agent: r.agent,
    targetSeq: r.target_seq,
    createdAt: r.created_at,
  };
}
