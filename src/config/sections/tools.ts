import { z } from 'zod';
import { timeoutMs } from '../fields.js';

export const toolSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('builtin'), name: z.enum(['calculator']) }),
  z.strictObject({
    type: z.literal('command'),
    command: z
      .array(z.string().min(1))
      .min(1)
      .describe('argument array; {arg} placeholders are filled from the call, no shell'),
    description: z.string().default(''),
    parameters: z.record(z.string(), z.string()).default({}).describe('argument name → description'),
    timeout_ms: timeoutMs().default(30_000),
  }),
]);
