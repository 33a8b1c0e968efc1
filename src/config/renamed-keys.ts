/**
 * Sections and loop steps renamed so that a concept has one name across the CLI, the code and the config
 * (`apo` → `prompt_opt`: prompt optimization, `massgen-rl train prompts`). An old spelling still loads,
 * moved to its new name, with a deprecation line naming both.
 */
const SECTIONS: Record<string, string> = { apo: 'prompt_opt' };
const STEPS: Record<string, string> = { apo: 'prompt_opt' };

type Raw = Record<string, unknown>;
const isMap = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Moves renamed sections and loop steps of a raw config to their new names, in place; a new key set wins. */
export function migrateRenamedKeys(raw: Raw): string[] {
  const notes: string[] = [];
  for (const [old, key] of Object.entries(SECTIONS)) {
    if (!Object.hasOwn(raw, old)) continue;
    const both = Object.hasOwn(raw, key);
    if (!both) raw[key] = raw[old];
    delete raw[old];
    notes.push(
      `${old} is deprecated: use ${key} (the same keys)${both ? `; ${key} is set too, so ${old} is ignored` : ''}`,
    );
  }
  return [...notes, ...migrateLoopSteps(raw)];
}

/** loop.steps with a renamed step, as the step is now called (also run after --set overrides). */
export function migrateLoopSteps(raw: Raw): string[] {
  const loop = raw.loop;
  if (!isMap(loop) || !Array.isArray(loop.steps)) return [];
  const renamed = (s: unknown) => (typeof s === 'string' && Object.hasOwn(STEPS, s) ? STEPS[s] : undefined);
  const old = [...new Set(loop.steps.filter((s) => renamed(s) !== undefined) as string[])];
  loop.steps = loop.steps.map((s: unknown) => renamed(s) ?? s);
  return old.map((s) => `loop.steps: ${s} is deprecated: use ${STEPS[s]}`);
}

/** A --set key under a renamed section, under its new name (`apo.rounds=2` → `prompt_opt.rounds=2`). */
export function migrateRenamedOverride(spec: string): string {
  const eq = spec.indexOf('=');
  const dot = spec.indexOf('.');
  const head = spec.slice(0, dot > 0 && dot < eq ? dot : eq);
  return eq > 0 && Object.hasOwn(SECTIONS, head) ? `${SECTIONS[head]}${spec.slice(head.length)}` : spec;
}
