/**
 * The config of a small unattended cycle on the bundled model: three agents on the local model (48 tokens, an
 * implicit answer), 40 arithmetic tasks, a few steps of SFT on every rollout, a short evaluation. The options are
 * what the tests that run it choose differently; `extra` is YAML appended as it is.
 */
export function smallCycleConfig(o: {
  agentTimeoutS: number;
  totalTimeoutS: number;
  maxSteps: number;
  evalN: number;
  collectN: number;
  extra?: string;
}): string {
  return `agents:
${['a', 'b', 'c'].map((x) => `  - { id: agent_${x}, model: local, tool_mode: text, implicit_answer: true, max_tokens: 48, temperature: 0.7 }`).join('\n')}
orchestrator: { max_action_retries: 1, max_rounds: 3, agent_timeout_s: ${o.agentTimeoutS}, total_timeout_s: ${o.totalTimeoutS} }
tasks:
  sources: [{ suite: arithmetic, n: 40 }]
collect: { concurrency: 2 }
train:
  algo: sft
  max_steps: ${o.maxSteps}
  batch_size: 2
  max_length: 384
  save_steps: 1
  learning_rate: 0.0001
  sft: { reward_threshold: null }
  gates: { min_examples: 1, min_clean_share: 0, min_categories: 1 }
eval: { n: ${o.evalN}, seeds: 1 }
loop: { collect_n: ${o.collectN} }
${o.extra ?? ''}`;
}
