/**
 * Regenerates test/fixtures/massgen-real/: one log directory written by the real MassGen (scripts/setup-massgen-venv.sh)
 * for SAMPLE_PLAN, served by the scripted server. Run: npx vite-node test/support/generate-massgen-fixture.ts
 * It replaces the fixture directory and prints what the server served (the tests read the same numbers
 * back from MassGen's own files).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SAMPLE_PLAN, SAMPLE_QUESTION, teamConfig, teamScript } from './massgen-team.js';
import { massgenAvailability, runMassgen } from './massgen.js';
import { startScriptedServer } from './scripted-server.js';

const out = fileURLToPath(new URL('../fixtures/massgen-real', import.meta.url));
const found = massgenAvailability();
if (!found.ok) throw new Error(`${found.reason}: run scripts/setup-massgen-venv.sh first`);

const { script, served } = teamScript(SAMPLE_PLAN);
const server = await startScriptedServer(script);
const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'massgen-fixture-'));
try {
  fs.writeFileSync(path.join(cwd, 'team.yaml'), teamConfig(SAMPLE_PLAN, server.baseUrl));
  const run = await runMassgen({ cwd, configFile: 'team.yaml', question: SAMPLE_QUESTION });
  if (run.exitCode !== 0 || !run.logDir || run.egress.length) {
    throw new Error(
      `massgen failed (exit ${run.exitCode}, egress ${run.egress.join(', ') || 'none'}):\n${run.stdout}\n${run.stderr}`,
    );
  }
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(out, { recursive: true });
  fs.cpSync(run.logDir, path.join(out, path.basename(run.logDir)), { recursive: true });
  const tokens = served.filter((s) => !server.aborted.some((a) => a === server.requests[s.index]));
  console.log(
    JSON.stringify(
      {
        log: path.basename(run.logDir),
        winner: run.winner,
        wallMs: run.wallMs,
        requests: server.requests.length,
        served: served.map((s) => `${s.agent} ${s.kind}${s.target ? ` ${s.target}` : ''}`),
        tokens: tokens.reduce((n, s) => n + s.usage.prompt_tokens + s.usage.completion_tokens, 0),
      },
      null,
      2,
    ),
  );
} finally {
  await server.close();
  fs.rmSync(cwd, { recursive: true, force: true });
}
