import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../../errors.js';
import type { Register } from '../register.js';

type InitFlags = { force: boolean } & import('./init-answers.js').InitAnswerFlags;

export const registerInit: Register = (program, ctx) => {
  program
    .command('init')
    .description('write a commented massgen-rl.yaml (asks a few questions; --yes writes the offline defaults)')
    .option('--force', 'overwrite an existing config file', false)
    .option('--name <name>', 'project name')
    .option('--team-size <n>', 'number of agents')
    .option('--endpoint <local|url>', '"local" (bundled model, offline) or an OpenAI-compatible base URL')
    .option('--model <name>', 'model name at the endpoint (remote endpoints)')
    .option('--api-key-env <VAR>', 'env var holding the API key (remote endpoints)')
    .option('--suite <suite>', 'built-in task suite')
    .option('--algo <algo>', 'training algorithm: grpo, sft, dpo or ppo')
    .action(async (flags: InitFlags) => {
      const c = ctx();
      const file = path.resolve(c.opts.config ?? process.env.MASSGEN_RL_CONFIG ?? 'massgen-rl.yaml');
      if (fs.existsSync(file) && !flags.force) {
        throw new UserError(`${file} already exists; nothing was written`, 'pass --force to overwrite it');
      }
      const { initAnswers } = await import('./init-answers.js');
      const { renderConfig } = await import('../../config/template.js');
      const answers = await initAnswers(flags, c);
      const text = renderConfig(answers);
      const { fromRaw } = await import('../../config/load.js');
      const { YamlSource } = await import('../../config/yaml-source.js');
      const parsed = YamlSource.parse(file, text);
      // The rendered file must load cleanly before it replaces anything.
      fromRaw(parsed.value as Record<string, unknown>, parsed.source, file, {
        cwd: path.dirname(file),
        env: process.env,
      });
      try {
        fs.mkdirSync(path.dirname(file), { recursive: true });
        fs.writeFileSync(`${file}.tmp`, text);
        fs.renameSync(`${file}.tmp`, file);
      } catch (err) {
        throw new UserError(`cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
      }
      if (c.ui.opts.json) return c.ui.json({ file, answers });
      c.ui.print(`${c.ui.c.green('✓')} wrote ${file}`);
      c.ui.print('next: massgen-rl doctor --fix');
    });
};
