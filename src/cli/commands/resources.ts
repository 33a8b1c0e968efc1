import { UserError } from '../../errors.js';
import { MAX_LIST, wholeNumber } from '../flags.js';
import type { Register } from '../register.js';
import { formatTime } from '../ui/format.js';

export const registerResources: Register = (program, ctx) => {
  const cmd = program
    .command('resources')
    .description('resource sets (production, canary, candidates) and where each resource came from');

  cmd
    .command('list')
    .description('resource sets, newest first')
    .option('--limit <n>', 'at most n', '30')
    .action(async (flags: { limit: string }) => {
      const { ui, runtime } = ctx();
      const { listSets } = await import('../../pipeline/utilities/resources.js');
      const sets = listSets(await runtime(), wholeNumber('--limit', flags.limit, MAX_LIST));
      if (ui.opts.json) return ui.json({ sets });
      if (!sets.length) return ui.print('no resource sets yet (the first collect creates production from the config)');
      ui.table(
        ['set', 'id', 'role', 'origin', 'created'],
        sets.map((s) => [
          `v${s.version}`,
          s.id,
          s.roles.join(', ') || '—',
          `${String(s.origin.kind)}${s.origin.training_run_id ? ` ${String(s.origin.training_run_id)}` : ''}${s.origin.spec ? ` ${String(s.origin.spec)}` : ''}`,
          formatTime(s.createdAt),
        ]),
      );
    });

  // The set is an argument, as for `show`: --set is the global config override.
  cmd
    .command('export-massgen <file> [set]')
    .description(
      'write a set (production, canary, set:N, vN or an rs_ id; default production) as a MassGen config, without deploying',
    )
    .option(
      '--gateway <url>',
      "send every agent through massgen-rl's gateway at this address (its calls captured and joined on import)",
    )
    .option('--session <id>', 'with --gateway: the session its calls are captured under (default: a new id)')
    .action(async (file: string, ref: string | undefined, flags: { gateway?: string; session?: string }) => {
      const { ui, runtime } = ctx();
      const { exportMassgenConfig } = await import('../../pipeline/utilities/resources.js');
      const gateway = gatewayFlags(flags);
      const r = exportMassgenConfig(await runtime(), file, { set: ref ?? 'production', gateway });
      if (ui.opts.json) return ui.json({ ok: true, ...r });
      ui.print(
        `${ui.c.green('✓')} wrote ${r.file}: MassGen config of set v${r.set.version}${r.set.roles.length ? ` (${r.set.roles.join(', ')})` : ''}`,
      );
      for (const a of r.agents) ui.print(`  ${a.id}: ${a.model} at ${a.baseUrl}`);
    });

  cmd
    .command('show [set]')
    .description(
      'a set (default: production) agent by agent, each resource traced back to the run and traces that made it',
    )
    .action(async (ref: string | undefined) => {
      const { ui, runtime } = ctx();
      const { showSet } = await import('../../pipeline/utilities/resources.js');
      const d = showSet(await runtime(), ref ?? 'production');
      if (ui.opts.json) return ui.json(d);
      ui.print(
        `${ui.c.bold(`set v${d.set.version}`)} ${d.set.id}${d.set.roles.length ? ` (${d.set.roles.join(', ')})` : ''}: ${JSON.stringify(d.set.origin)}`,
      );
      for (const a of d.agents) {
        ui.print(`  ${ui.c.bold(a.agent)}`);
        for (const [what, t, follows] of [
          ['prompt', a.prompt, a.followsConfig.prompt],
          ['weights', a.weights, a.followsConfig.weights],
        ] as const) {
          if (!t) {
            ui.print(`    ${what}: served elsewhere`);
            continue;
          }
          ui.print(
            `    ${what}: ${t.name} v${t.version} (${t.source}${follows ? ', follows the config' : ''})${t.lineage.length ? ` ← ${t.lineage.map((l) => `v${l.version}`).join(' ← ')}` : ''}`,
          );
          if (t.checkpoint)
            ui.print(
              `      checkpoint ${t.checkpoint.id} (${t.checkpoint.algo ?? '—'}), dataset ${t.checkpoint.datasetHash?.slice(0, 12) ?? '—'}${t.checkpoint.parent ? `, parent ${t.checkpoint.parent}` : ''}`,
            );
          if (t.trainingRun) ui.print(`      training run ${t.trainingRun.id} (${t.trainingRun.status})`);
          if (t.traces)
            ui.print(
              `      trained on ${t.traces.rollouts} rollout(s), #${t.traces.from + 1}…#${t.traces.to} (\`massgen-rl traces list\`)`,
            );
        }
      }
      for (const { decision, policy: t } of d.policies) {
        ui.print(
          `  ${ui.c.bold(`${decision} policy`)}: ${t ? `${t.name} v${t.version} (${t.source})${t.lineage.length ? ` ← ${t.lineage.map((l) => `v${l.version}`).join(' ← ')}` : ''}` : 'missing'}`,
        );
        if (t?.trainingRun) ui.print(`    training run ${t.trainingRun.id} (${t.trainingRun.status})`);
      }
      if (d.presenter) {
        const t = d.presenter.prompt;
        ui.print(
          `  ${ui.c.bold('presenter')}: ${t ? `${t.name} v${t.version} (${t.source}${d.presenter.followsConfig ? ', follows the config' : ''})${t.lineage.length ? ` ← ${t.lineage.map((l) => `v${l.version}`).join(' ← ')}` : ''}` : 'missing'}`,
        );
      }
      if (d.history.length) {
        ui.table(
          ['audit', 'when', 'action', 'trigger', 'change', 'reason'],
          d.history.map((h) => [
            `#${h.id}`,
            formatTime(h.createdAt),
            h.action,
            h.trigger,
            `${h.beforeSet ?? '—'} → ${h.afterSet ?? '—'}`,
            h.reason ?? '',
          ]),
        );
      }
    });
};

const SESSION = /^[\w.-]{1,128}$/;

function gatewayFlags(flags: { gateway?: string; session?: string }): { url: string; session: string } | undefined {
  if (flags.gateway === undefined) {
    if (flags.session !== undefined) throw new UserError('--session names the gateway session: give --gateway too');
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(flags.gateway);
  } catch {
    throw new UserError(`--gateway ${flags.gateway}: not a URL (e.g. http://127.0.0.1:8330)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UserError(`--gateway ${flags.gateway}: expected an http(s) URL`);
  const session = flags.session ?? `massgen-${Date.now().toString(36)}`;
  if (!SESSION.test(session))
    throw new UserError(`--session ${session}: letters, digits, '.', '_' and '-' only, at most 128`);
  return { url: url.href, session };
}
