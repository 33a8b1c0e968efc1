import type { Algo, TrainConfig } from '../config/schema.js';
import { UserError } from '../errors.js';
import { failureReason, runPythonModule } from '../python/module.js';
import { sectionSettings, type TrainerSettings } from './trainer-config.js';

export interface SettingsCheck {
  python: string;
  train: TrainConfig;
  /** The sections to check (default: every algorithm's). */
  algos: readonly Algo[];
  /** Extra settings of this run (--max-steps), checked with the section's. */
  extra?: TrainerSettings;
  signal?: AbortSignal;
}

/**
 * The train.<algo> sections' trainer settings, checked by the trainers' own dataclasses (one Python process:
 * massgen_rl_training.check) and returned complete; a bad one is a UserError naming its key path.
 */
export async function checkTrainerSettings(c: SettingsCheck): Promise<Record<string, TrainerSettings>> {
  const sections = Object.fromEntries(c.algos.map((a) => [a, { ...sectionSettings(c.train, a), ...c.extra }]));
  const request = { sections, processes: c.train.num_processes, cpu_only: c.train.gpus === 'none' };
  const r = await runPythonModule({
    python: c.python,
    module: 'massgen_rl_training.check',
    args: ['--request', JSON.stringify(request)],
    timeoutMs: 60_000,
    signal: c.signal,
  });
  if (r.exitCode === 2 && r.error) {
    throw new UserError(
      `invalid trainer settings:\n  ${r.error.split('\n').join('\n  ')}`,
      "the settings of each trainer are its dataclass's fields (python/massgen_rl_training/<algo>.py)",
    );
  }
  if (!r.done) throw new Error(`checking the trainer settings failed: ${failureReason(r)}`);
  return r.done.settings as Record<string, TrainerSettings>;
}
