import { errorMessage } from '../errors.js';

/** The body of a reward call, as the GRPO trainer sends it (prompts are checked but not needed). */
export interface RewardRequest {
  completions: string[];
  meta: Record<string, unknown>[];
}

/** The request is not the contract's JSON (answered with 400). */
export class MalformedRequest extends Error {
  override name = 'MalformedRequest';
}

export function parseRewardRequest(text: string): RewardRequest {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw new MalformedRequest(`the body is not JSON: ${errorMessage(err)}`);
  }
  const shape = 'expected {"prompts": [[messages]], "completions": [str], "meta": [{...}]}';
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw new MalformedRequest(`the body is not a JSON object; ${shape}`);
  const { prompts, completions, meta } = body as Record<string, unknown>;
  for (const [key, value] of Object.entries({ prompts, completions, meta })) {
    if (!Array.isArray(value)) throw new MalformedRequest(`"${key}" must be an array; ${shape}`);
  }
  const [texts, metas, n] = [completions as unknown[], meta as unknown[], (prompts as unknown[]).length];
  if (n !== texts.length || metas.length !== texts.length) {
    throw new MalformedRequest(
      `prompts, completions and meta must have the same length, got ${n}, ${texts.length} and ${metas.length}`,
    );
  }
  const notText = texts.findIndex((t) => typeof t !== 'string');
  if (notText >= 0) throw new MalformedRequest(`completions[${notText}] must be a string`);
  const notObject = metas.findIndex((m) => !m || typeof m !== 'object' || Array.isArray(m));
  if (notObject >= 0) throw new MalformedRequest(`meta[${notObject}] must be an object`);
  return { completions: texts as string[], meta: metas as Record<string, unknown>[] };
}
