import { UserError } from '../errors.js';
import { complete, configMembers, withPolicy, withPrompt, withWeights, type SetContext } from '../resources/sets.js';
import type { Resource, ResourceSet, SetOrigin } from '../store/index.js';

/** A set as the command line names it, or by its id as one stage hands it to the next (never parsed). */
export type SetSpec = string | { setId: string };

/**
 * A set as named on the command line: `production`, the canary, a set (`set:N`, `vN`, an `rs_` id), a
 * checkpoint (`ck_…`), weights (`resource:NAME@V`, or `NAME@V` for a weight line), a prompt version
 * (`NAME@V`) or a policy (`policy:KIND@V`): anything but a whole set is production with that resource swapped in.
 */
export function resolveSet(ctx: SetContext, production: ResourceSet, spec: SetSpec, what: string): ResourceSet {
  const { store } = ctx;
  if (typeof spec !== 'string') return completeSet(ctx, knownSet(ctx, spec.setId));
  const ref = spec.trim();
  if (ref === 'production') return production;
  if (ref === 'canary') {
    const p = store.sets.pointer('canary');
    if (!p) throw new UserError(`${what} canary: no canary is running`);
    return store.sets.get(p.setId)!;
  }
  const setRef = /^set:(.+)$/.exec(ref)?.[1] ?? (/^(rs_[a-z0-9]+|v\d+)$/.test(ref) ? ref : undefined);
  if (setRef !== undefined) {
    const set = store.sets.resolve(setRef);
    if (!set)
      throw new UserError(
        `${what} ${ref}: no such resource set (or the prefix is ambiguous)`,
        'see `massgen-rl resources list`',
      );
    return completeSet(ctx, set);
  }
  const swap = (members: ResourceSet['members'], origin: SetOrigin) => store.sets.add(members, origin, production.id);
  if (/^ck_[a-z0-9]*$/.test(ref)) {
    const ck = store.checkpoints.resolve(ref);
    if (!ck?.resourceId)
      throw new UserError(
        `${what} ${ref}: no checkpoint with this id (or the prefix is ambiguous)`,
        'see `massgen-rl checkpoints list`',
      );
    const weight = store.resources.get(ck.resourceId)!;
    return swap(withWeights(production.members, store, weight, ctx.config), {
      kind: 'candidate',
      spec: ref,
      checkpoint_id: ck.id,
      weight_id: weight.id,
      training_run_id: ck.trainingRunId,
    });
  }
  const pol = /^policy:([a-z]+)@(\d+)$/.exec(ref);
  if (pol) {
    const policy = store.resources.list('policy').find((r) => r.name === pol[1] && r.version === Number(pol[2]));
    if (!policy)
      throw new UserError(
        `${what} ${ref}: no ${pol[1]} policy has version ${pol[2]}`,
        `see \`massgen-rl resources list\`; train one with \`massgen-rl train policy ${pol[1]}\``,
      );
    return swap(withPolicy(production.members, policy), { kind: 'candidate', spec: ref, policy_id: policy.id });
  }
  const m = /^(?:(resource):)?([A-Za-z0-9][A-Za-z0-9_.-]*)@(\d+)$/.exec(ref);
  if (!m) {
    throw new UserError(
      `${what} ${ref}: expected production, canary, set:N, a checkpoint id (ck_…), resource:NAME@VERSION, PROMPT@VERSION or policy:KIND@VERSION`,
    );
  }
  const [, explicit, name, v] = m as unknown as [string, string | undefined, string, string];
  const find = (kind: 'weight' | 'prompt'): Resource | undefined =>
    store.resources.list(kind).find((r) => r.name === name && r.version === Number(v));
  const weight = find('weight');
  const prompt = explicit ? undefined : find('prompt');
  if (weight && !prompt)
    return swap(withWeights(production.members, store, weight, ctx.config), {
      kind: 'candidate',
      spec: ref,
      weight_id: weight.id,
    });
  if (prompt && !weight)
    return swap(withPrompt(production.members, ctx.config, prompt), {
      kind: 'candidate',
      spec: ref,
      prompt_id: prompt.id,
    });
  if (prompt && weight)
    throw new UserError(
      `${what} ${ref}: both a prompt and a weight line are called "${name}"; write resource:${ref} for the weights`,
    );
  throw new UserError(
    `${what} ${ref}: no prompt or weight resource "${name}" has version ${v}`,
    'see `massgen-rl resources list`',
  );
}

/**
 * The candidate when none is named: the newest resource set a training run (or a prompt optimization)
 * produced that is not production, rebuilt on today's production (only its new resource swapped in).
 */
export function latestCandidate(ctx: SetContext, production: ResourceSet): ResourceSet {
  const { store } = ctx;
  for (const set of store.sets.list(200)) {
    if (set.id === production.id || !['training', 'prompt', 'policy'].includes(set.origin.kind)) continue;
    // A prompt-optimization run makes a set per candidate; only the one its run chose is a candidate here.
    if (
      typeof set.origin.apo_run === 'string'
      && store.trainingRuns.get(set.origin.apo_run)?.result?.candidate_set !== set.id
    )
      continue;
    const resource = (key: string) =>
      typeof set.origin[key] === 'string' ? store.resources.get(set.origin[key]) : undefined;
    const [weight, prompt, policy] = [resource('weight_id'), resource('prompt_id'), resource('policy_id')];
    const prompts = Array.isArray(set.origin.prompt_ids)
      ? (set.origin.prompt_ids as string[]).map((id) => store.resources.get(id)).filter((r) => r !== undefined)
      : [];
    const members = weight
      ? withWeights(production.members, store, weight, ctx.config)
      : prompt
        ? withPrompt(production.members, ctx.config, prompt)
        : prompts.length
          ? prompts.reduce((m, r) => withPrompt(m, ctx.config, r), production.members)
          : policy
            ? withPolicy(production.members, policy)
            : set.members;
    const candidate = store.sets.add(members, { ...set.origin, rebased_from: set.id }, production.id);
    if (candidate.id !== production.id) return candidate;
  }
  throw new UserError(
    'nothing to evaluate: no training run has produced a candidate since production was set',
    'train one (`massgen-rl train`) or name one with --candidate',
  );
}

/** A stored set handed over by id; a missing one is a bug, not the user's input. */
function knownSet(ctx: SetContext, id: string): ResourceSet {
  const set = ctx.store.sets.get(id);
  if (!set) throw new Error(`resource set ${id} is not in the store`);
  return set;
}

/** The set with the members the config adds since it was made (a new set when any are added). */
function completeSet(ctx: SetContext, set: ResourceSet): ResourceSet {
  const members = complete(set, configMembers(ctx));
  return members === set.members || JSON.stringify(members) === JSON.stringify(set.members)
    ? set
    : ctx.store.sets.add(members, { kind: 'candidate', completed_from: set.id }, set.id);
}
