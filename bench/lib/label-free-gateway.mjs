// Arm (c) of the label-free benchmark: label-free cycles on traffic captured through the gateway. An agent written
// against the official openai SDK, knowing nothing of massgen-rl, asks each train task a few times in one session
// (self-consistency) through `massgen-rl gateway`, which serves production; each night `loop --once` takes the
// captured sessions (collect.source gateway), where agreement among the replies to one prompt is the only reward,
// trains, and its own label-free gates decide. After each night the references, withheld from all of it, score
// production against the base on the eval split (and the transfer set).
import { OpenAI } from 'openai';
import { gateway } from '../../dist/pipeline/serve/gateway.js';
import { labelFreeNights } from './label-free-nights.mjs';

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
 * `nights` label-free nights on the agent's traffic (lib/label-free-nights.mjs). `load()` loads the arm's project
 * (rewards.references off, collect.source gateway); `judge()` loads it with the references on.
 */
export function gatewayArm({ load, judge, nights, samples, transfer }) {
  const traffic = async (rt, tasks, night, note) => {
    const gw = await gateway(rt, { port: 0, flushMs: 100 });
    try {
      const sent = await drive(gw, tasks, { samples, concurrency: 2, night, note });
      return { fields: { traffic: sent }, summary: `${sent.calls} calls captured (${sent.failed} failed)` };
    } finally {
      await gw.stop();
    }
  };
  return labelFreeNights(
    { arm: 'gateway', load, judge, nights, transfer, traffic },
    { arm: 'gateway', samples, nights: [] },
  );
}
