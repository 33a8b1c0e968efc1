/**
 * Synthetic but realistic span payloads: chat prompts with a messages array, sized to a byte range.
 * A small share of them carries a secret (the configured env value or a token the builtin patterns catch),
 * so the redactor's replace path runs too, as it would on real traces.
 */

const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'tra',
  'ven',
  'so',
  'rix',
  'pel',
  'dun',
  'ga',
  'the',
  'or',
  'an',
  'qui',
  'zel',
  'mor',
  'ta',
  'ne',
  'sil',
  'bo',
  'fen',
  'ul',
  'cra',
  'di',
];
const MODELS = ['qwen2.5-7b-instruct', 'llama-3.1-8b-instruct', 'gpt-4o-mini', 'mistral-small-latest'];
const AGENTS = ['agent_a', 'agent_b', 'agent_c', 'judge'];
const ROLES_AFTER_SYSTEM = ['user', 'assistant'];

function word(rng) {
  let w = '';
  for (let n = rng.int(1, 3); n > 0; n--) w += rng.pick(SYLLABLES);
  return w;
}

/** Prose of about `chars` characters, with the odd quote and newline that JSON has to escape. */
function prose(rng, chars) {
  let text = '';
  while (text.length < chars) {
    let sentence = word(rng);
    for (let n = rng.int(5, 14); n > 0; n--) sentence += ` ${rng.chance(0.04) ? `"${word(rng)}"` : word(rng)}`;
    text += `${sentence[0].toUpperCase()}${sentence.slice(1)}${rng.chance(0.15) ? '.\n' : '. '}`;
  }
  return text.slice(0, Math.max(chars, 1));
}

function token(rng, alphabet, length) {
  let s = '';
  for (let i = 0; i < length; i++) s += alphabet[Math.floor(rng.next() * alphabet.length)];
  return s;
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function secretText(rng, envSecret) {
  switch (rng.int(0, 2)) {
    case 0:
      return `my key is ${envSecret}`;
    case 1:
      return `Authorization: Bearer ${token(rng, ALNUM, 40)}`;
    default:
      return `use sk-${token(rng, ALNUM, 32)} for the api`;
  }
}

/**
 * A chat payload whose JSON is about targetBytes long.
 * opts: { targetBytes, secretRate (0..1), envSecret }
 */
export function chatPayload(rng, { targetBytes, secretRate = 0, envSecret = 'sk-none' }) {
  const turns = Math.max(1, Math.min(6, Math.round(targetBytes / 300)));
  const payload = {
    model: rng.pick(MODELS),
    params: { temperature: rng.pick([0, 0.2, 0.7, 1]), max_tokens: rng.pick([256, 512, 1024]) },
    messages: [],
    usage: { prompt_tokens: rng.int(50, 4000), completion_tokens: rng.int(10, 800) },
  };
  const overhead = JSON.stringify(payload).length + turns * 30;
  const perTurn = Math.max(8, Math.floor((targetBytes - overhead) / turns));
  for (let i = 0; i < turns; i++) {
    const role = i === 0 && turns > 2 ? 'system' : ROLES_AFTER_SYSTEM[i % 2];
    payload.messages.push({ role, content: prose(rng, perTurn) });
  }
  if (rng.chance(secretRate)) {
    const last = payload.messages[payload.messages.length - 1];
    last.content = `${last.content.slice(0, -40)} ${secretText(rng, envSecret)}`;
  }
  return payload;
}

export function agentName(rng) {
  return rng.pick(AGENTS);
}
