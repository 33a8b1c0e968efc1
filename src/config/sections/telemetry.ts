import { z } from 'zod';
import { count, timeoutMs } from '../fields.js';

const header = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be an HTTP header name');

export const telemetrySchema = z.strictObject({
  otlp: z
    .strictObject({
      endpoint: z
        .url({
          protocol: /^https?$/,
          error: 'must be an http:// or https:// URL, e.g. http://127.0.0.1:6006/v1/traces',
        })
        .nullable()
        .default(null)
        .describe(
          "an OTLP/HTTP traces endpoint (the full URL, e.g. Phoenix's http://127.0.0.1:6006/v1/traces): collect, "
            + 'eval and the gateway send each rollout there once it finishes; null: off',
        ),
      protocol: z
        .enum(['protobuf', 'json'])
        .default('protobuf')
        .describe('OTLP/HTTP body: protobuf (every collector takes it) or json'),
      headers: z
        .record(header, z.string())
        .default({})
        .describe(
          'sent with every export, e.g. authorization: "Bearer ${PHOENIX_API_KEY}" (values from the environment)',
        ),
      project: z
        .string()
        .min(1)
        .default('massgen-rl')
        .describe("the spans' service.name and Phoenix project (openinference.project.name)"),
      batch_rollouts: count(10_000).default(20).describe('rollouts per export request at most'),
      interval_ms: timeoutMs(3600)
        .default(5000)
        .describe('how often the continuous export looks for finished rollouts'),
      timeout_ms: timeoutMs(600)
        .default(10_000)
        .describe("one export request's deadline, retries included (a dead collector costs a run no more)"),
    })
    .prefault({}),
});

export type TelemetryConfig = z.output<typeof telemetrySchema>;
