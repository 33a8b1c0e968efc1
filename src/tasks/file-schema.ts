import { z } from 'zod';

export const TASK_FIELDS = ['id', 'prompt', 'reference', 'category', 'metadata'] as const;

const stringError = (field: string) => (iss: { input: unknown }) =>
  iss.input === undefined ? `missing required field "${field}"` : `"${field}" must be a string`;
const nonBlank = (field: string) => z.string({ error: stringError(field) }).regex(/\S/, `"${field}" must not be empty`);

/** One task as written in a task file. null in an optional field means the field is absent. */
export const taskRecordSchema = z.strictObject({
  id: nonBlank('id'),
  prompt: nonBlank('prompt'),
  reference: z
    .union([z.string(), z.number()], {
      error: (iss) =>
        typeof iss.input === 'number'
          ? '"reference" must be a finite number'
          : '"reference" must be a string or a number',
    })
    .nullish()
    .transform((v) => (v == null ? undefined : String(v))),
  category: nonBlank('category')
    .nullish()
    .transform((v) => v ?? undefined),
  metadata: z
    .record(z.string(), z.unknown(), { error: '"metadata" must be an object (a mapping)' })
    .nullish()
    .transform((v) => v ?? {}),
});

export type TaskRecord = z.output<typeof taskRecordSchema>;

export interface RecordIssue {
  /** The field the problem is about, when there is one (its own line is reported in YAML). */
  field?: string;
  message: string;
}

/** Validates one record; every problem in it is returned, unknown fields one by one. */
export function checkRecord(value: unknown): { record?: TaskRecord; issues: RecordIssue[] } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    const got = value === null ? 'null' : Array.isArray(value) ? 'a list' : `a ${typeof value}`;
    return { issues: [{ message: `expected a task object with "id" and "prompt", got ${got}` }] };
  }
  const result = taskRecordSchema.safeParse(value);
  if (result.success) {
    const tolerance = result.data.metadata.tolerance;
    // Read by the numeric reward, which would otherwise quietly fall back to rewards.numeric_tolerance.
    if (tolerance !== undefined && !(typeof tolerance === 'number' && Number.isFinite(tolerance) && tolerance >= 0)) {
      return {
        issues: [
          {
            field: 'metadata',
            message: `"metadata.tolerance" must be a non-negative number, got ${JSON.stringify(tolerance) ?? String(tolerance)}`,
          },
        ],
      };
    }
    return { record: result.data, issues: [] };
  }
  const issues = result.error.issues.flatMap((issue): RecordIssue[] => {
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((k) => ({ field: k, message: `unknown field "${k}"; allowed: ${TASK_FIELDS.join(', ')}` }));
    }
    const field = typeof issue.path[0] === 'string' ? issue.path[0] : undefined;
    return [{ field, message: issue.message }];
  });
  return { issues };
}
