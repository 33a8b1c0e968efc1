/**
 * The offline GRPO line under a training summary: the tokens per answer, the sampling temperature the policy
 * scored at, what was left out and how often a completion was used (the trainer's `grpo/*` done metrics).
 * Null when the run reported none of them (other algorithms, online GRPO without completion lengths).
 */
export function grpoSummaryLine(metrics: Record<string, unknown>): string | null {
  const n = (key: string) => (typeof metrics[key] === 'number' ? (metrics[key] as number) : null);
  const parts: string[] = [];
  const tokens = n('completion_tokens');
  if (tokens !== null) parts.push(`${tokens.toFixed(1)} tokens per answer`);
  if (metrics['grpo/generation'] === 'server')
    parts.push(`sampled by the built-in server (the adapter synced into it ${n('grpo/adapter_syncs') ?? '?'}×)`);
  const temperature = n('grpo/temperature');
  if (temperature !== null) parts.push(`scored at temperature ${temperature}`);
  const left = [
    [n('grpo/left_out_greedy'), 'greedy'],
    [n('grpo/left_out_other_temperature'), 'at other temperatures'],
  ].filter(([count]) => count) as [number, string][];
  if (left.length) parts.push(`left out ${left.map(([count, what]) => `${count} ${what}`).join(', ')}`);
  const cut = n('grpo/truncated');
  if (cut) parts.push(`${cut} of ${n('grpo/replayed') ?? '?'} cut at max_completion_length`);
  const uses = n('grpo/max_uses');
  if (uses !== null) {
    const steps = n('grpo/steps');
    const asked = n('grpo/requested_steps');
    const capped = steps !== null && asked !== null && steps < asked ? `, ${asked} steps asked, ${steps} run` : '';
    parts.push(`each completion used at most ${uses}× (max_reuse ${n('grpo/max_reuse') ?? '?'}${capped})`);
  }
  return parts.length ? `  grpo: ${parts.join('; ')}` : null;
}
