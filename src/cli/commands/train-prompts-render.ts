import type { RLConfig } from '../../config/schema.js';
import type { PromptOptResult } from '../../pipeline/prompt-opt/train-prompts.js';
import { formatDuration } from '../ui/format.js';
import type { Ui } from '../ui/output.js';

type Proposal = PromptOptResult['proposals'][number];
const num = (x: number | null | undefined) =>
  x === null || x === undefined || !Number.isFinite(x) ? '—' : x.toFixed(3);

/** The progress line of one step: what was tried, what came of it, the front, and the budgets spent. */
export function promptOptStepLine(
  p: Proposal,
  f: { best: string | null; bestMean: number; size: number },
  spent: PromptOptResult['spent'],
  a: RLConfig['prompt_opt'],
): string {
  const what =
    p.kind === 'merge' ? `merge ${p.parents.join('+')}` : `reflect on ${p.parents[0]} → edit ${p.component ?? '—'}`;
  const mb = p.minibatch ? ` (minibatch ${num(p.minibatch.parent)} → ${num(p.minibatch.child)})` : '';
  return (
    `round ${p.step + 1}/${a.rounds}: ${what}: ${p.outcome}${p.candidate ? ` ${p.candidate}` : ''}${mb}; ${p.detail}`
    + ` | best ${f.best ?? '—'} ${num(f.bestMean)}, front ${f.size}`
    + ` | rollouts ${spent.rollouts}/${a.budget.rollouts}, optimizer tokens ${spent.optimizerTokens}/${a.budget.optimizer_tokens}, ${formatDuration(spent.wallMs)}/${a.budget.wall_min} min`
  );
}

export function renderPromptOpt(ui: Ui, r: PromptOptResult): void {
  if (ui.opts.json) return ui.json(r);
  ui.table(
    ['candidate', 'from', 'edited', `validation ${r.metric}`, 'front', 'prompts'],
    r.candidates.map((c) => [
      `${c.id}${c.id === r.best?.id ? ' (best)' : ''}`,
      c.parents.join('+') || 'current',
      c.edited ?? (c.parents.length > 1 ? 'merge' : '—'),
      num(c.valMean),
      c.onFront ? 'yes' : '',
      c.prompts.map((p) => `${p.name} v${p.version}`).join(', '),
    ]),
  );
  ui.print(
    `  run ${r.runId} ${r.status}${r.stopReason ? ` (${r.stopReason})` : ''}: ${r.proposals.length} proposal(s); spent ${r.spent.rollouts} rollouts, ${r.spent.optimizerTokens} optimizer tokens, ${formatDuration(r.spent.wallMs)}`,
  );
  if (r.status === 'cancelled') return ui.print('  resume it: massgen-rl train prompts --resume');
  if (!r.candidateSet)
    return ui.print(
      `  no candidate beat the current prompts (${num(r.baselineMean)}) on the validation batch: nothing new to evaluate`,
    );
  ui.print(
    `  best ${r.best!.id}: ${num(r.best!.valMean)} against ${num(r.baselineMean)} now; evaluate it: massgen-rl eval (candidate set v${r.candidateSet.version})`,
  );
}
