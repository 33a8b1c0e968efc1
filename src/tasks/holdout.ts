import { splitPoint } from './split.js';
import type { Task, TemplatesByKind } from './types.js';

/** Eval-only templates by kind. */
export type HeldOut = Readonly<Record<string, readonly string[]>>;

/**
 * The templates of each kind of a suite that are eval-only (`tasks.split.holdout_templates`). A kind's
 * templates are ranked by splitPoint(`<suite>/<kind>/<template>`); the first k are held out, where k is
 * fraction × count rounded down, or up when splitPoint(`<suite>/<kind>`) falls below the remainder, so
 * each kind holds out that fraction on average (1 of 2 templates for half the kinds at 0.5 × 2 …).
 * A kind always keeps one template for train; a kind with one template holds none out.
 */
export function heldOutTemplates(suite: string, templates: TemplatesByKind, fraction: number, salt: string): HeldOut {
  if (!(fraction > 0)) return {};
  const held: Record<string, string[]> = {};
  for (const [kind, names] of Object.entries(templates)) {
    if (names.length < 2) continue;
    const share = fraction * names.length;
    const k = Math.min(
      names.length - 1,
      Math.floor(share) + (splitPoint(`${suite}/${kind}`, salt) < share - Math.floor(share) ? 1 : 0),
    );
    if (!k) continue;
    const ranked = names
      .map((name) => ({ name, point: splitPoint(`${suite}/${kind}/${name}`, salt) }))
      .sort((a, b) => a.point - b.point);
    held[kind] = ranked.slice(0, k).map((r) => r.name);
  }
  return held;
}

/** Whether a suite task used one of its suite's held-out templates (its metadata names kind and template). */
export function usesHeldOutTemplate(task: Task, held: HeldOut): boolean {
  const { kind, template } = task.metadata;
  if (typeof kind !== 'string' || template === undefined || !Object.hasOwn(held, kind)) return false;
  return held[kind]!.includes(String(template));
}

/** The expected share of a suite's tasks that use a held-out template, its kinds and their templates drawn evenly. */
export function heldOutShare(templates: TemplatesByKind, held: HeldOut): number {
  const kinds = Object.entries(templates);
  if (!kinds.length) return 0;
  return (
    kinds.reduce((sum, [kind, names]) => sum + (Object.hasOwn(held, kind) ? held[kind]!.length / names.length : 0), 0)
    / kinds.length
  );
}
