import type { Db } from './database.js';
import type { Redactor } from './redact.js';
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
