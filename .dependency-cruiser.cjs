/**
 * Import rules of massgen-rl (docs/architecture.md). `npm test` checks them (test/integration/architecture.test.ts);
 * `npx depcruise src` shows every violation with its path.
 *
 * LAYERS runs from the top down: a folder may import its own files and any folder of a lower layer,
 * never one above it, and never another folder of its own layer.
 */
const LAYERS = [
  ['cli'],
  ['pipeline'],
  ['rollouts', 'interop', 'scheduler', 'report', 'gateway'],
  ['runtime'],
  ['serving'],
  ['trainers', 'evaluation', 'telemetry'],
  ['datasets', 'resources'],
  ['rewards', 'tools', 'policies', 'prompt-opt'],
  ['orchestrator'],
  ['llm', 'store'],
  ['tasks', 'python'],
  ['config'],
  ['trace'],
  ['util', 'errors.ts'],
];

const folder = (name) => (name.endsWith('.ts') ? `src/${name.replace('.', '\\.')}$` : `src/${name}/`);
const any = (names) => `^(${names.map(folder).join('|')})`;

const layerRules = LAYERS.flatMap((layer, i) => {
  const above = LAYERS.slice(0, i).flat();
  return layer.flatMap((name) => {
    const siblings = layer.filter((other) => other !== name);
    return [
      ...(above.length
        ? [
            {
              name: `layer-${name.replace('.ts', '')}-upward`,
              comment: `${name} sits below ${above.join(', ')}: it must not import them (data flows one way)`,
              severity: 'error',
              from: { path: `^${folder(name)}` },
              to: { path: any(above) },
            },
          ]
        : []),
      ...(siblings.length
        ? [
            {
              name: `layer-${name.replace('.ts', '')}-sibling`,
              comment: `${name} and ${siblings.join(', ')} share a layer: neither imports the other`,
              severity: 'error',
              from: { path: `^${folder(name)}` },
              to: { path: any(siblings) },
            },
          ]
        : []),
    ];
  });
});

/** A package (resolved into node_modules, or named as is when it cannot be resolved). */
const pkg = (names) => `(^|node_modules/)(${names.join('|')})(/|$)`;

/**
 * The modules that may switch production (or make outside targets follow a switch): deploy (with rollback and canary
 * promotion), review, publish, the loop that runs them, their commands, and the one step that syncs the config into
 * production (pipeline/production-sync.ts). Reading production (resources/production.ts, Runtime.production()) is a
 * read.
 */
const switchers = [
  'pipeline/deploy/deploy.ts',
  'pipeline/deploy/publish.ts',
  'pipeline/review/review.ts',
  'pipeline/loop/stages.ts',
  'pipeline/production-sync.ts',
  'cli/commands/deploy.ts',
  'cli/commands/review.ts',
];

const ownership = [
  {
    name: 'only-cli-imports-cli',
    comment: 'nothing imports the CLI: it is the top of the one-way flow',
    from: { path: '^src/', pathNot: '^src/cli/' },
    to: { path: '^src/cli/' },
  },
  {
    name: 'database-drivers-only-in-store',
    comment: 'src/store/ is the only importer of the database drivers',
    from: { path: '^src/', pathNot: '^src/store/' },
    to: { path: pkg(['better-sqlite3', 'pg', 'postgres', 'pg-boss', 'graphile-worker']) },
  },
  {
    name: 'terminal-ui-only-in-cli-ui',
    comment: 'src/cli/ui/ is the only importer of ora, cli-table3 and @inquirer/prompts',
    from: { path: '^src/', pathNot: '^src/cli/ui/' },
    to: { path: pkg(['ora', 'cli-table3', '@inquirer/[^/]+']) },
  },
  {
    name: 'commander-only-in-cli',
    comment: 'flags are parsed in src/cli/ only',
    from: { path: '^src/', pathNot: '^src/cli/' },
    to: { path: pkg(['commander']) },
  },
  {
    name: 'processes-only-in-their-owners',
    comment:
      'execa only in the modules that own processes: python/, trainers/, serving/, tools/ and the custom reward command',
    from: { path: '^src/', pathNot: '^src/(python|trainers|serving|tools)/|^src/rewards/custom\\.ts$' },
    to: { path: pkg(['execa']) },
  },
  {
    name: 'opentelemetry-only-in-telemetry',
    comment: 'the OpenTelemetry packages and the protobuf reader of OTLP requests only in src/telemetry/',
    from: { path: '^src/', pathNot: '^src/telemetry/' },
    to: { path: pkg(['@opentelemetry/[^/]+', 'protobufjs']) },
  },
  {
    name: 'cron-only-in-scheduler',
    comment: 'node-cron only in src/scheduler/',
    from: { path: '^src/', pathNot: '^src/scheduler/' },
    to: { path: pkg(['node-cron', 'croner']) },
  },
  {
    name: 'production-switches-only-in-deploy-and-review',
    comment:
      'production changes only in the deploy stage (deploy, rollback, canary promotion) and the review stage '
      + '(a canary promoted or stopped, a regressed deploy rolled back), their commands and the loop that runs them; '
      + 'pipeline/production-sync.ts follows config edits, once per command or cycle. Collect, the runtime and the '
      + 'rest record and read only (type imports are fine)',
    from: { path: '^src/', pathNot: switchers.map((f) => `^src/${f.replace('.', '\\.')}$`).join('|') },
    to: {
      path: '^src/(pipeline/(deploy/deploy|deploy/publish|review/review)|resources/production-switch)\\.ts$',
      dependencyTypesNot: ['type-only'],
    },
  },
  {
    name: 'stages-below-the-loop',
    comment:
      'pipeline/loop/ drives the stages: no stage folder (collect, train, evaluate, …) imports it, '
      + 'nor the utility commands of pipeline/utilities/, which sit on top of the stages',
    from: { path: '^src/pipeline/', pathNot: '^src/pipeline/(loop|utilities)/' },
    to: { path: '^src/pipeline/(loop|utilities)/' },
  },
].map((r) => ({ severity: 'error', ...r }));

const placed = {
  name: 'every-module-has-a-layer',
  severity: 'error',
  comment:
    'every file under src/ lives in a folder of the layer table (add a new folder to LAYERS and docs/architecture.md)',
  from: { path: '^src/', pathNot: `${any(LAYERS.flat())}|^src/[^/]+\\.ts$` },
  to: {},
};

module.exports = {
  forbidden: [
    placed,
    ...ownership,
    ...layerRules,
    {
      name: 'no-circular',
      comment: 'no import cycles, type-only imports included',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
