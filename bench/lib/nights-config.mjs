// The project a nights run works in (bench/nights.mjs), shared with bench/recipes.mjs, which trains recipes from a
// kept one: the quickstart's four suites and sizes with the curriculum on, and NIGHTS_SET's changes.
export const NIGHTS_SUITES = ['arithmetic', 'unit_conversion', 'string_transform', 'multi_step'];

/** `key=value;key=value` as --set overrides. */
export function setList(text) {
  return (text ?? '')
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** The run's overrides: `perSuite` tasks a suite, the quick sizes with `quick`, then `changes`. */
export function nightsOverrides({ perSuite, quick, changes }) {
  return [
    `tasks.sources=${JSON.stringify(NIGHTS_SUITES.map((suite) => ({ suite, n: perSuite })))}`,
    'tasks.split.eval_fraction=0.3',
    'tasks.curriculum.enabled=true',
    'eval.report=false',
    ...(quick ? ['collect.samples_per_turn=2', 'train.dpo.num_train_epochs=1', 'train.gates.min_examples=1'] : []),
    ...changes,
  ];
}
