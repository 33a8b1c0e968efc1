import { describe, expect, it } from 'vitest';
import { grpoSummaryLine } from '../../src/cli/commands/train-summary.js';

describe('the offline GRPO summary line', () => {
  it('says tokens per answer, the temperature, what was left out and the reuse bound', () => {
    const metrics = {
      completion_tokens: 41.25,
      'grpo/temperature': 0.7,
      'grpo/left_out_greedy': 12,
      'grpo/left_out_other_temperature': 0,
      'grpo/max_uses': 2,
      'grpo/max_reuse': 2,
      'grpo/steps': 40,
      'grpo/requested_steps': 706,
      'grpo/truncated': 3,
      'grpo/replayed': 160,
    };
    expect(grpoSummaryLine(metrics)).toBe(
      '  grpo: 41.3 tokens per answer; scored at temperature 0.7; left out 12 greedy; '
        + '3 of 160 cut at max_completion_length; each completion used at most 2× (max_reuse 2, 706 steps asked, 40 run)',
    );
    expect(grpoSummaryLine({ completion_tokens: 12 })).toBe('  grpo: 12.0 tokens per answer');
    expect(grpoSummaryLine({ completion_tokens: 9.5, 'grpo/generation': 'server', 'grpo/adapter_syncs': 4 })).toBe(
      '  grpo: 9.5 tokens per answer; sampled by the built-in server (the adapter synced into it 4×)',
    );
    expect(grpoSummaryLine({ completion_tokens: 9.5, 'grpo/generation': 'policy' })).toBe(
      '  grpo: 9.5 tokens per answer',
    );
    expect(grpoSummaryLine({ train_loss: 0.1 })).toBeNull();
  });
});
