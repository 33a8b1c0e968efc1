// Checks the formatting and lint of the code: prettier and eslint for TypeScript and JavaScript, ruff for Python
// (.prettierrc.json, eslint.config.js, ruff.toml). `npm run lint` checks; `npm run format` (--fix) rewrites what
// the tools can fix. `npm test` runs the checks as its lint suite (scripts/run-tests.mjs).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = (name) => path.join(root, 'node_modules', '.bin', name);

/** The ruff pin: the `lint` extra of python/pyproject.toml, which `doctor --fix` does not install. */
export function ruffSpec() {
  const text = fs.readFileSync(path.join(root, 'python', 'pyproject.toml'), 'utf8');
  const spec = /^lint\s*=\s*\[\s*"(ruff==[^"]+)"/m.exec(text)?.[1];
  if (!spec) throw new Error('python/pyproject.toml: no `lint = ["ruff==<version>"]` extra');
  return spec;
}

/** The trainer venv (as src/config/paths.ts places it, or $MASSGEN_RL_VENV), where prepare-tests installs ruff. */
export function trainerVenv(env = process.env) {
  if (env.MASSGEN_RL_VENV) return path.resolve(env.MASSGEN_RL_VENV);
  if (env.MASSGEN_RL_CACHE_DIR) return path.join(path.resolve(env.MASSGEN_RL_CACHE_DIR), 'venv');
  const base = env.XDG_CACHE_HOME ? path.resolve(env.XDG_CACHE_HOME) : path.join(os.homedir(), '.cache');
  return path.join(base, 'massgen-rl', 'venv');
}

/** The venv's ruff, else a ruff on PATH. */
function ruffCommand(env) {
  const inVenv = path.join(trainerVenv(env), 'bin', 'ruff');
  return fs.existsSync(inVenv) ? inVenv : 'ruff';
}

/** Runs the four checks (or, with fix, the fixers and then the formatters); each one counts as passed or failed. */
export function lint({ fix = false, env = process.env } = {}) {
  const ruff = ruffCommand(env);
  const steps = fix
    ? [
        ['eslint --fix', bin('eslint'), ['--fix', '.']],
        ['prettier --write', bin('prettier'), ['--write', '--log-level', 'warn', '.']],
        ['ruff check --fix', ruff, ['check', '--fix', '.']],
        ['ruff format', ruff, ['format', '.']],
      ]
    : [
        ['prettier --check', bin('prettier'), ['--check', '--log-level', 'warn', '.']],
        ['eslint', bin('eslint'), ['.']],
        ['ruff check', ruff, ['check', '.']],
        ['ruff format --check', ruff, ['format', '--check', '.']],
      ];
  const counts = { passed: 0, failed: 0, skipped: 0 };
  for (const [name, cmd, args] of steps) {
    console.log(`-- ${name}`);
    const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: root, env });
    if (r.error?.code === 'ENOENT' && cmd === ruff) {
      console.error(`ruff not found: run \`node scripts/prepare-tests.mjs\` or \`pip install ${ruffSpec()}\``);
    } else if (r.error) {
      console.error(`${name}: ${r.error.message}`);
    }
    if (r.status === 0) counts.passed++;
    else counts.failed++;
  }
  console.log(`lint: ${counts.passed} passed, ${counts.failed} failed`);
  return counts;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.exit(lint({ fix: process.argv.includes('--fix') }).failed ? 1 : 0);
}
