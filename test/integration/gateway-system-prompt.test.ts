import { describe, expect, it } from 'vitest';
import { loadConfig, type LoadedConfig } from '../../src/config/load.js';
import { gateway, type Gateway } from '../../src/pipeline/serve/gateway.js';
import { switchProduction } from '../../src/resources/production-switch.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import type { PromptPayload } from '../../src/trace/payloads.js';
import { tempDir } from '../helpers.js';
import { startChatBackend, type ChatBackend } from '../support/chat-backend.js';
import { gatewayProjects } from '../support/gateway-projects.js';
import { freshPostgresUrl } from '../support/postgres.js';

interface Project {
  backend: ChatBackend;
  loaded: LoadedConfig;
  rt: Runtime;
  gw: Gateway;
}

const track = gatewayProjects<Project>();

async function project(storeYaml = ''): Promise<Project> {
  const backend = await startChatBackend();
  const yaml = `models:
  scripted: { base_url: "${backend.baseUrl}", model: backend-model }
prompts:
  solver: { text: "You are the production solver." }
  critic: { text: "You are the production critic." }
agents:
  - { id: a, model: scripted, system_prompt: solver }
  - { id: b, model: scripted, system_prompt: critic }
gateway:
  aliases: { planner: { model: scripted, agent: a } }
  agents: { a: { system_prompt: production }, b: { system_prompt: client } }
${storeYaml}
`;
  const loaded = loadConfig({ cwd: tempDir({ 'massgen-rl.yaml': yaml }), env: process.env });
  const rt = new Runtime(loaded);
  const gw = await gateway(rt, { port: 0, flushMs: 20, armsRefreshMs: 200 });
  const p = { backend, loaded, rt, gw };
  track(p);
  return p;
}

const CLIENT_SYSTEM = { role: 'system', content: "the client's own prompt" };
const ASK = { role: 'user', content: 'Say hello' };

async function post(p: Project, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await fetch(`${p.gw.url}/v1/chat/completions`, {
    method: 'POST',
    body: JSON.stringify({ model: 'scripted', messages: [CLIENT_SYSTEM, ASK], ...body }),
    headers: { 'content-type': 'application/json', ...headers },
  });
  expect(res.status).toBe(200);
  await res.text();
  return p.backend.seen.at(-1)!.body.messages;
}

/** Every captured chat span's agent, messages and system prompt note, in call order. */
async function capturedCalls(p: Project) {
  await p.gw.stop();
  const store = openStore(p.loaded);
  try {
    return store.rollouts
      .list()
      .filter((r) => r.source === 'gateway')
      .flatMap((r) => store.spans.list(r.id))
      .sort((x, y) => x.startedAt - y.startedAt)
      .map((s) => {
        const payload = s.payload as PromptPayload;
        return { agent: s.agent, messages: payload.request.messages, note: payload.gateway?.system_prompt };
      });
  } finally {
    store.close();
  }
}

describe("the gateway replaces an opted-in agent's system prompt with production's", () => {
  it('replaces it for X-Agent-Id and an alias, streamed or not; others go as they came; the span holds what was sent', async () => {
    const p = await project();
    const solver = { role: 'system', content: 'You are the production solver.' };
    expect(await post(p, {}, { 'x-agent-id': 'a', 'x-session-id': 's1' })).toEqual([solver, ASK]);
    expect(await post(p, { model: 'planner', stream: true }, { 'x-session-id': 's1' })).toEqual([solver, ASK]);
    expect(await post(p, { messages: [ASK] }, { 'x-agent-id': 'a', 'x-session-id': 's1' })).toEqual([solver, ASK]);
    expect(await post(p, {}, { 'x-agent-id': 'b', 'x-session-id': 's1' })).toEqual([CLIENT_SYSTEM, ASK]);
    expect(await post(p, {}, { 'x-session-id': 's1' })).toEqual([CLIENT_SYSTEM, ASK]);

    const calls = await capturedCalls(p);
    const note = { replaced: true, resource: 'solver@1', set_id: expect.any(String), client_messages: 1 };
    expect(calls).toEqual([
      { agent: 'a', messages: [solver, ASK], note },
      { agent: 'a', messages: [solver, ASK], note },
      { agent: 'a', messages: [solver, ASK], note: { ...note, client_messages: 0 } },
      { agent: 'b', messages: [CLIENT_SYSTEM, ASK], note: undefined },
      { agent: null, messages: [CLIENT_SYSTEM, ASK], note: undefined },
    ]);
  });

  it.each([
    ['SQLite', () => ''],
    ['PostgreSQL', () => `store: { url: "${freshPostgresUrl()}" }`],
  ])('a deploy of a new prompt version (%s) reaches the next requests within a second', async (_, storeYaml) => {
    const p = await project(storeYaml());
    expect(await post(p, {}, { 'x-agent-id': 'a' })).toEqual([
      { role: 'system', content: 'You are the production solver.' },
      ASK,
    ]);
    // the deploy, as another process makes it: a new solver version in a new set, production switched
    const store = openStore(p.loaded);
    try {
      const production = store.sets.get(store.sets.pointer('production')!.setId)!;
      const before = store.resources.get(production.members.agents.a!.prompt)!;
      const v2 = store.resources.add({
        kind: 'prompt',
        name: 'solver',
        content: 'You are the optimized solver.',
        parentId: before.id,
        metadata: { source: 'apo' },
      });
      const members = { ...production.members, agents: { ...production.members.agents } };
      members.agents.a = { ...members.agents.a!, prompt: v2.id, from_config: { prompt: false, weights: true } };
      const next = store.sets.add(members, { kind: 'prompt' }, production.id);
      const reason = 'a new solver prompt';
      switchProduction(store, p.loaded.paths.dataDir, { to: next, action: 'deploy', trigger: 'cli', reason });
    } finally {
      store.close();
    }
    const switched = performance.now();
    let sent: unknown;
    do {
      await new Promise((resolve) => setTimeout(resolve, 50));
      sent = await post(p, {}, { 'x-agent-id': 'a' });
    } while ((sent as { content: string }[])[0]!.content.includes('production') && performance.now() - switched < 2000);
    expect(performance.now() - switched).toBeLessThan(1000);
    expect(sent).toEqual([{ role: 'system', content: 'You are the optimized solver.' }, ASK]);
    const last = (await capturedCalls(p)).at(-1)!;
    expect(last.note).toMatchObject({ resource: 'solver@2' });
  });
});

describe('gateway.agents', () => {
  it('names a config agent: another id is a config error naming the field', () => {
    const yaml =
      'models:\n  m: { base_url: "http://127.0.0.1:9/v1", model: x }\nagents:\n  - { id: a, model: m }\n'
      + 'gateway: { agents: { a: { system_prompt: production }, ghost: { system_prompt: production } } }\n';
    expect(() => loadConfig({ cwd: tempDir({ 'massgen-rl.yaml': yaml }) })).toThrow(
      /gateway\.agents\.ghost: unknown agent "ghost"; agents: a/,
    );
  });
});
