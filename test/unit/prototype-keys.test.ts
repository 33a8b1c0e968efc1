import { describe, expect, it } from 'vitest';
import { StatsCollector } from '../../src/datasets/stats.js';
import { parseJudgeReply } from '../../src/rewards/judge-reply.js';
import { rewardsByChannel } from '../../src/trace/orchestration-trace.js';
import type { Reward } from '../../src/trace/records.js';
import { stepMetrics, type StepEvent } from '../../src/trainers/trainer-events.js';
import { configIn, configIssues } from '../helpers.js';

/** Names every plain object already "has". */
const PROTO_NAMES = ['constructor', 'toString', 'hasOwnProperty', 'valueOf'];

describe('names that are Object.prototype keys', () => {
  it('are unknown models, prompts and tools unless the config defines them', () => {
    const issues = configIssues(`models:
  m: { base_url: "http://127.0.0.1:9/v1", model: x }
agents:
  - { id: a, model: toString, system_prompt: constructor, tools: [hasOwnProperty] }
rewards:
  judge: { model: valueOf }
`);
    expect(issues).toEqual([
      'agents[0].model: unknown model "toString"; models: m (massgen-rl.yaml:4:21)',
      'agents[0].system_prompt: unknown prompt "constructor"; prompts: solver (massgen-rl.yaml:4:46)',
      'agents[0].tools[0]: unknown tool "hasOwnProperty"; no tools are defined (massgen-rl.yaml:4:67)',
      'rewards.judge.model: unknown model "valueOf"; models: m (massgen-rl.yaml:6:19)',
    ]);
  });

  it('work as names of models, prompts, tools and agents when defined', () => {
    const { config } = configIn(
      `models:
  constructor: { base_url: "http://127.0.0.1:9/v1", model: x }
prompts:
  toString: { text: "You solve tasks." }
tools:
  hasOwnProperty: { type: builtin, name: calculator }
agents:
  - { id: valueOf, model: constructor, system_prompt: toString, tools: [hasOwnProperty] }
`,
      {},
      {},
    );
    expect(Object.keys(config.models)).toEqual(['constructor']);
    expect(config.agents[0]).toMatchObject({
      id: 'valueOf',
      model: 'constructor',
      system_prompt: 'toString',
      tools: ['hasOwnProperty'],
    });
  });

  it('count as task categories, reward channels, judge criteria and trainer metrics', () => {
    const stats = new StatsCollector();
    for (const c of [...PROTO_NAMES, '__proto__']) stats.row({ clean: true, categories: [c, c], rollouts: ['r'] });
    expect({ ...stats.categories }).toEqual({
      constructor: 1,
      toString: 1,
      hasOwnProperty: 1,
      valueOf: 1,
      ['__proto__']: 1,
    });

    const reward = (channel: string, value: number) => ({ channel, value }) as Reward;
    expect({
      ...rewardsByChannel([reward('constructor', 0.5), reward('constructor', 0.25), reward('rollout', 1)]),
    }).toEqual({ constructor: 0.75, rollout: 1 });

    const rubric = [
      { criterion: 'constructor', weight: 1 },
      { criterion: '__proto__', weight: 1 },
    ];
    const verdict = parseJudgeReply('{"scores": {"constructor": 7, "__proto__": 3}, "reason": "ok"}', rubric);
    expect(Object.entries(verdict.scores)).toEqual([
      ['constructor', 7],
      ['__proto__', 3],
    ]);

    const step = JSON.parse('{"event": "step", "step": 1, "loss": 0.5, "__proto__": 2}') as StepEvent;
    expect(Object.entries(stepMetrics(step))).toEqual([
      ['loss', 0.5],
      ['__proto__', 2],
    ]);
  });
});
