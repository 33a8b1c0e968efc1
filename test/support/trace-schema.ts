import Ajv2020 from 'ajv/dist/2020.js';
import fs from 'node:fs';
import path from 'node:path';
import type { OrchestrationTrace } from '../../src/trace/orchestration-trace.js';
import { FIXTURES } from '../helpers.js';

const schema = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'orchestration-trace.schema.json'), 'utf8'));
const validate = new Ajv2020({ allErrors: true }).compile(schema);

/** The schema, plus the rules it cannot express: unique event ids, edges between existing events, non-negative costs and times. */
export function traceProblems(trace: unknown): string[] {
  const out: string[] = [];
  if (!validate(trace)) out.push(...(validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`));
  const t = trace as OrchestrationTrace;
  const ids = new Set<string>();
  for (const e of t.events ?? []) {
    if (ids.has(e.id)) out.push(`duplicate event id ${e.id}`);
    ids.add(e.id);
    if (!(e.t >= 0)) out.push(`event ${e.id}: t ${e.t} < 0`);
  }
  for (const e of t.edges ?? [])
    if (!ids.has(e.src) || !ids.has(e.dst)) out.push(`edge ${e.src} -> ${e.dst} references a missing event`);
  for (const [k, v] of Object.entries(t.costs ?? {})) if (!(v >= 0)) out.push(`cost ${k} is negative`);
  return out;
}
