// Arm (c) of the label-free benchmark: label-free cycles on traffic captured through the gateway. An agent written
// against the official openai SDK, knowing nothing of massgen-rl, asks each train task a few times in one session
// (self-consistency) through `massgen-rl gateway`, which serves production; each night `loop --once` takes the
// captured sessions (collect.source gateway), where agreement among the replies to one prompt is the only reward,
// trains, and its own label-free gates decide. After each night the references, withheld from all of it, score
// production against the base on the eval split (and the transfer set).
import { OpenAI } from 'openai';
import { gateway } from '../../dist/pipeline/serve/gateway.js';
import { Runtime } from '../../dist/runtime/runtime.js';
import { loadTasks } from '../../dist/tasks/index.js';
import { againstBase, cycle, onTransfer } from './cycles.mjs';
import { progress } from './report.mjs';

/** The agent's own instructions: a user's prompt, not the embedded team's. */
export const AGENT_PROMPT =
  'You are a helpful assistant. Work the problem out briefly, then give the final answer on its own last line.';

/** Every train task `samples` times in one session each, `concurrency` sessions at once; what the agent answered. */
async function drive(gw, tasks, { samples, concurrency, night, note }) {
  // the gateway on loopback without gateway.api_keys_env takes any key
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 2, timeout: 600_000 });
  let next = 0,
    done = 0,
    calls = 0,
    failed = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const task = tasks[next++];
      for (let i = 0; i < samples; i++) {
        try {
          await client.chat.completions.create(
            {
              model: 'local',
              messages: [
                { role: 'system', content: AGENT_PROMPT },
                { role: 'user', content: task.prompt },
              ],
              temperature: 0.8,
              max_tokens: 128,
            },
            { headers: { 'X-Session-Id': `night-${night}:${task.id}`, 'X-Agent-Id': 'solver' } },
          );
          calls++;
        } catch (err) {
          failed++;
          note(`call failed: ${err.message}`);
        }
      }
      done++;
      if (done % 20 === 0 || done === tasks.length) note(`${done}/${tasks.length} tasks asked`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { tasks: tasks.length, calls, failed };
}

/**
 * `nights` label-free cycles on captured traffic. `load()` loads the arm's project (rewards.references off,
 * collect.source gateway); `judge()` loads it with the references on, to score production against the base set (1)
 * as the other arms are scored.
 */
export async function gatewayArm({ load, judge, nights, samples, transfer }) {
  const out = { arm: 'gateway', samples, nights: [] };
  for (let night = 1; night <= nights; night++) {
    const note = (m) => progress(`  gateway night ${night}: ${m}`);
    const rt = new Runtime(load());
    let traffic;
    try {
      const tasks = loadTasks(rt.config.tasks, rt.paths.baseDir).filter((t) => t.split === 'train');
      const gw = await gateway(rt, { port: 0, flushMs: 100 });
      try {
        traffic = await drive(gw, tasks, { samples, concurrency: 2, night, note });
      } finally {
        await gw.stop();
      }
    } finally {
      await rt.close();
    }
    note(`${traffic.calls} calls captured (${traffic.failed} failed); the night's loop`);
    const ran = await cycle(load, `  gateway night ${night}`, (_rt, r) => ({
      captured: r.stages.collect?.captured ?? null,
    }));
    const truth = await againstBase(judge, 1);
    const entry = { night, traffic, ...ran, production: truth.production, vsBase: truth.comparison };
    if (transfer && truth.comparison) entry.transfer = await onTransfer(judge, 1, truth.production, `  night ${night}`);
    out.nights.push(entry);
  }
  return out;
}
