import type { TrainConfig } from './schema.js';
import type { ConfigPath } from './yaml-source.js';

export interface TrainIssue {
  path: ConfigPath;
  message: string;
}

/** Training over several machines: this machine's rank, where machine 0 listens, how the processes split. */
export function machineIssues(t: TrainConfig): TrainIssue[] {
  const issues: TrainIssue[] = [];
  const n = t.num_machines;
  if (t.machine_rank >= n) {
    issues.push({
      path: ['train', 'machine_rank'],
      message: `rank ${t.machine_rank} is out of range: train.num_machines is ${n}, so a machine's rank is ${n === 1 ? '0' : `0 to ${n - 1}`}`,
    });
  }
  if (n > 1 && !t.main_process_ip) {
    issues.push({
      path: ['train', 'main_process_ip'],
      message: `required with num_machines ${n}: the address of machine 0 that every machine can reach`,
    });
  }
  if (t.num_processes % n) {
    issues.push({
      path: ['train', 'num_processes'],
      message: `counts the processes of all ${n} machines together (accelerate's --num_processes), so it must be a multiple of ${n}; got ${t.num_processes}`,
    });
  }
  return issues;
}

/** A train.sft section (or a role's sft recipe at `at`): its teacher model exists, and its augments need select verified. */
export function sftIssues(
  sft: Pick<TrainConfig['sft'], 'teacher' | 'rationalize' | 'select'>,
  at: ConfigPath,
  models: string[],
): TrainIssue[] {
  const issues: TrainIssue[] = [];
  if (sft.teacher && !models.includes(sft.teacher.model)) {
    const known = models.length ? `models: ${models.join(', ')}` : 'no models are defined';
    issues.push({ path: [...at, 'teacher', 'model'], message: `unknown model "${sft.teacher.model}"; ${known}` });
  }
  for (const key of ['rationalize', 'teacher'] as const) {
    const on = key === 'rationalize' ? sft.rationalize?.enabled : sft.teacher;
    if (on && sft.select !== 'verified')
      issues.push({
        path: [...at, key],
        message: `adds rows for tasks no verified completion solved: it needs ${at.join('.')}.select: verified`,
      });
  }
  return issues;
}
