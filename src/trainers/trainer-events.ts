import { parseEvent } from '../python/module.js';
import { dict } from '../util/dict.js';

/** The trainer protocol's events (docs/trainer-protocol.md), in their wire shape (snake_case); extra fields are kept. */
export interface StepEvent {
  event: 'step';
  step: number;
  total_steps: number | null;
  epoch: number | null;
  loss: number | null;
  reward: number | null;
  kl: number | null;
  learning_rate: number | null;
  tokens_per_s: number | null;
  [key: string]: unknown;
}

export interface CheckpointEvent {
  event: 'checkpoint';
  path: string;
  step: number | null;
  [key: string]: unknown;
}

export interface DoneEvent {
  event: 'done';
  /** The final model or adapter folder. */
  path: string;
  metrics: Record<string, unknown>;
  adapter: boolean;
  [key: string]: unknown;
}

export interface ErrorEvent {
  event: 'error';
  message: string;
  [key: string]: unknown;
}

export interface ProgressEvent {
  event: 'progress';
  stage: string;
  message: string;
  [key: string]: unknown;
}

export type TrainerEvent = StepEvent | CheckpointEvent | DoneEvent | ErrorEvent | ProgressEvent;

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const isObject = (v: unknown): v is Record<string, unknown> => Boolean(v) && typeof v === 'object' && !Array.isArray(v);

/**
 * One stdout line as a typed protocol event. Undefined when the line is not a JSON event, names an
 * unknown event, or lacks a required field (step number, checkpoint or done path): such lines are log text.
 */
export function parseTrainerEvent(line: string): TrainerEvent | undefined {
  const ev = parseEvent(line.trim());
  if (!ev) return undefined;
  switch (ev.event) {
    case 'step': {
      const step = num(ev.step);
      if (step === null) return undefined;
      return {
        ...ev,
        event: 'step',
        step,
        total_steps: num(ev.total_steps),
        epoch: num(ev.epoch),
        loss: num(ev.loss),
        reward: num(ev.reward),
        kl: num(ev.kl),
        learning_rate: num(ev.learning_rate),
        tokens_per_s: num(ev.tokens_per_s),
      };
    }
    case 'checkpoint': {
      const path = str(ev.path);
      return path ? { ...ev, event: 'checkpoint', path, step: num(ev.step) } : undefined;
    }
    case 'done': {
      const path = str(ev.path);
      return path
        ? { ...ev, event: 'done', path, metrics: isObject(ev.metrics) ? ev.metrics : {}, adapter: ev.adapter === true }
        : undefined;
    }
    case 'error':
      return { ...ev, event: 'error', message: str(ev.message) ?? 'unknown error (the error event had no message)' };
    case 'progress':
      return { ...ev, event: 'progress', stage: str(ev.stage) ?? '', message: str(ev.message) ?? '' };
    default:
      return undefined;
  }
}

/** GRPO's mean completion tokens of a step (TRL's completions/mean_length in its metrics); null without. */
export function stepCompletionTokens(e: StepEvent): number | null {
  const value = isObject(e.metrics) ? e.metrics['completions/mean_length'] : undefined;
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/** The numeric fields of a step event: what training_metrics stores per step. */
export function stepMetrics(e: StepEvent): Record<string, number> {
  const out = dict<number>();
  for (const [k, v] of Object.entries(e))
    if (k !== 'event' && k !== 'step' && typeof v === 'number' && Number.isFinite(v)) out[k] = v;
  return out;
}
