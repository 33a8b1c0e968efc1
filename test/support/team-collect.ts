import { loadConfig, type LoadedConfig } from '../../src/config/load.js';
import { collect, type CollectSummary } from '../../src/pipeline/collect/collect.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { tempDir } from '../helpers.js';
import { startScriptedServer, type Script, type ScriptedServer } from './scripted-server.js';
import { shownLabels } from './team.js';

export const TEAM_TASKS = [
  { id: 'mul', prompt: 'What is 6 x 7?', reference: '42', category: 'arithmetic' },
  { id: 'sub', prompt: 'What is 50 - 8?', reference: '42', category: 'arithmetic' },
  { id: 'cap', prompt: 'What is the answer to everything?', reference: '42', category: 'trivia' },
]
  .map((t) => JSON.stringify(t))
  .join('\n');

/**
 * a answers 42 at once; b answers 41 once it has seen agent1 (a and c wait, so they are cancelled);
 * in the last round a and c vote for agent1 and b for its own answer; the winner presents 42.
 */
export const teamScript: Script = (req) => {
  if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: 'Final answer: 42' };
  const shown = shownLabels(req);
  const who = req.model.slice(-1);
  if (!shown.length)
    return who === 'a' ? { content: 'ANSWER: 42' } : { content: `ANSWER: ${who === 'b' ? 41 : 40}`, delayMs: 300 };
  if (shown.length === 1)
    return who === 'b' ? { content: 'ANSWER: 41' } : { content: 'VOTE: agent1 | fine', delayMs: 300 };
  return who === 'b' ? { content: 'VOTE: agent2 | mine is right' } : { content: 'VOTE: agent1 | correct' };
};

export interface TeamCollect {
  loaded: LoadedConfig;
  dir: string;
  server: ScriptedServer;
  summary: CollectSummary;
}

/**
 * A project whose team of three (a, b, c) runs teamScript against a scripted endpoint on TEAM_TASKS, and
 * one collect of all three tasks. `extraYaml` is appended to the config, `collectKeys` (", key: value")
 * to its collect section. The caller closes the server.
 */
export async function teamCollect(
  extraYaml = '',
  files: Record<string, string> = {},
  collectKeys = '',
): Promise<TeamCollect> {
  const server = await startScriptedServer(teamScript);
  const models = ['a', 'b', 'c']
    .map((x) => `  stub_${x}: { base_url: "${server.baseUrl}", model: model-${x} }`)
    .join('\n');
  const yaml = `models:\n${models}\nagents:\n${['a', 'b', 'c'].map((x) => `  - { id: ${x}, model: stub_${x}, tool_mode: text }`).join('\n')}
tasks:\n  sources: [{ file: tasks.jsonl }]
rewards:\n  weights: { exact: 1, numeric: 1, coordination: 0.2, voting: 0.5, peer_vote: 0.2 }
collect: { concurrency: 1, split: all${collectKeys} }
orchestrator: { agent_timeout_s: 5, total_timeout_s: 30 }
${extraYaml}`;
  const dir = tempDir({ 'massgen-rl.yaml': yaml, 'tasks.jsonl': TEAM_TASKS, ...files });
  const loaded = loadConfig({ cwd: dir });
  const summary = await withRuntime(loaded, (rt) => collect(rt));
  return { loaded, dir, server, summary };
}
