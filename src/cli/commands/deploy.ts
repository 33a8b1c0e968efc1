import type { DeployResult } from '../../pipeline/deploy/deploy.js';
import type { Published } from '../../pipeline/deploy/publish.js';
import type { Register } from '../register.js';
import type { Ui } from '../ui/output.js';

interface DeployFlags {
  candidate?: string;
  force?: boolean;
  canary?: string | true;
  promoteCanary?: boolean;
  exportMassgen?: string;
  reason?: string;
}

export const registerDeploy: Register = (program, ctx) => {
  program
    .command('deploy')
    .description('promote an evaluated candidate to production when the deploy gates pass (with an audit record)')
    .option(
      '--candidate <spec>',
      'set:N, a checkpoint id, resource:NAME@VERSION or PROMPT@VERSION (default: the newest evaluated candidate)',
    )
    .option('--force', 'promote even when a gate fails or the candidate was not evaluated (the audit record says so)')
    .option(
      '--canary [fraction]',
      'serve the candidate to this share of later collects and gateway sessions first, e.g. 0.2 (no value: the first stage of deploy.rollout)',
    )
    .option('--promote-canary', 'promote the running canary now if its gates pass (with --force: regardless)')
    .option('--export-massgen <file>', 'also write the new production as a MassGen config (YAML) to this file')
    .option('--reason <text>', 'why, for the audit record')
    .action(async (flags: DeployFlags) => {
      const { ui, runtime } = ctx();
      const { deploy, refusal, promoteCanary } = await import('../../pipeline/deploy/deploy.js');
      const rt = await runtime();
      if (flags.promoteCanary) {
        const r = await promoteCanary(rt, {
          force: flags.force,
          reason: flags.reason,
          exportMassgen: flags.exportMassgen,
        });
        if (ui.opts.json) ui.json({ ok: r.action !== 'not promoted', ...r });
        else render(ui, r);
        if (r.action === 'not promoted') throw refusal(r);
        return;
      }
      const canary = flags.canary === undefined || flags.canary === true ? flags.canary : Number(flags.canary);
      const r = await deploy(rt, {
        candidate: flags.candidate,
        force: flags.force,
        canary,
        exportMassgen: flags.exportMassgen,
        reason: flags.reason,
      });
      if (ui.opts.json) ui.json({ ok: r.action !== 'not promoted', ...r });
      else render(ui, r);
      if (r.action === 'not promoted') throw refusal(r);
    });

  program
    .command('rollback')
    .description('restore the previous production set (or --to a named one), with an audit record')
    .option('--to <set>', 'the set to restore: set:N, vN or an rs_ id')
    .option('--role <name>', "restore only this role's members (config roles); every other role keeps production's")
    .option('--reason <text>', 'why, for the audit record')
    .action(async (flags: { to?: string; role?: string; reason?: string }) => {
      const { ui, runtime } = ctx();
      const { rollback } = await import('../../pipeline/deploy/deploy.js');
      const r = await rollback(await runtime(), { to: flags.to, role: flags.role, reason: flags.reason });
      if (ui.opts.json) return ui.json({ ok: true, ...r });
      ui.print(
        `${ui.c.green('✓')} production is set v${r.after.version} again (was v${r.before.version}); audit #${r.auditId}`,
      );
      renderPublished(ui, r.published);
    });
};

function render(ui: Ui, r: DeployResult): void {
  for (const g of r.gates) ui.print(`  ${g.passed ? ui.c.green('✓') : ui.c.red('✗')} ${g.gate}: ${g.detail}`);
  const what = `set v${r.candidate.version} (production was v${r.before.version}${r.evalRunId ? `; evaluation ${r.evalRunId}` : ''})`;
  if (r.action === 'not promoted') return ui.print(ui.c.yellow(`not promoted: ${what}`));
  ui.print(`${ui.c.green('✓')} ${r.action}: ${what}; audit #${r.auditId}`);
  if (r.published) renderPublished(ui, r.published);
}

function renderPublished(ui: Ui, p: Published): void {
  const mark = (ok: boolean) => (ok ? ui.c.green('✓') : ui.c.red('✗'));
  for (const v of p.vllm) ui.print(`  ${mark(v.ok)} vLLM ${v.action} ${v.loraName}: ${v.detail}`);
  renderServers(ui, p);
  for (const m of p.massgen) ui.print(`  ${mark(m.ok)} MassGen config ${m.file}${m.ok ? '' : `: ${m.detail}`}`);
  ui.info(`production file: ${p.productionFile}`);
}

/** The running local servers that followed the switch (or could not). */
function renderServers(ui: Ui, published: Published | null): void {
  const mark = { swapped: ui.c.green('✓'), 'restart needed': ui.c.yellow('!'), left: '-', failed: ui.c.red('✗') };
  for (const s of published?.servers ?? []) {
    ui.print(
      `  ${mark[s.action]} local server ${s.servedName} (models.${s.model}, pid ${s.pid}, ${s.server}): ${s.action} for ${s.weights}: ${s.detail}`,
    );
  }
}
