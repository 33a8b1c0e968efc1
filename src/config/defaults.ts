/** The embedded offline defaults: a local SmolLM2 team on built-in tasks. */
export const DEFAULT_MODEL_NAME = 'smollm2-135m-instruct';
export const DEFAULT_MODEL_REF = `builtin:${DEFAULT_MODEL_NAME}`;
export const DEFAULT_CONFIG_FILE = 'massgen-rl.yaml';

export const DEFAULT_SYSTEM_PROMPT = [
  'You are a careful problem solver working in a team of agents.',
  'Solve the task step by step and state the final answer clearly on its own line.',
].join('\n');

export const defaultModels = {
  local: {
    model: DEFAULT_MODEL_NAME,
    local: { weights: DEFAULT_MODEL_REF },
  },
};

export const defaultPrompts = { solver: { text: DEFAULT_SYSTEM_PROMPT } };

export const defaultAgents = ['agent_a', 'agent_b', 'agent_c'].map((id) => ({
  id,
  model: 'local',
  system_prompt: 'solver',
  tool_mode: 'text' as const,
  implicit_answer: true,
  max_tokens: 128,
}));
