import path from 'node:path';
import { InputFileError, MiB, readRegularFile } from '../config/input-file.js';
import { DEFAULT_MAX_PROMPT_CHARS } from '../config/schema.js';
import { parseJsonl, parseYamlTasks, type ParsedFile } from './file-formats.js';
import { OversizedTaskError, taskFileGuard } from './file-guard.js';
import { checkRecord } from './file-schema.js';
import type { Task } from './types.js';

export interface LocatedTask {
  task: Task;
  /** `file:line`, for messages about this task. */
  where: string;
}

export interface TaskFileResult {
  tasks: LocatedTask[];
  /** Every problem found, each as `file:line: message`. */
  issues: string[];
}

/** Larger task collections go in several files (tasks.sources takes a list). */
const MAX_TASK_FILE_BYTES = 256 * MiB;

const PARSERS: Record<string, { parse: (text: string) => ParsedFile; written: 'json' | 'yaml' }> = {
  '.jsonl': { parse: parseJsonl, written: 'json' },
  '.ndjson': { parse: parseJsonl, written: 'json' },
  '.yaml': { parse: parseYamlTasks, written: 'yaml' },
  '.yml': { parse: parseYamlTasks, written: 'yaml' },
  '.json': { parse: parseYamlTasks, written: 'json' }, // a JSON list or {tasks: [...]} is YAML too
};

export interface TaskFileOptions {
  /** tasks.max_prompt_chars: a longer prompt is refused with its line. */
  maxPromptChars?: number;
}

/**
 * Reads one task file. `display` names it in messages; `source` is recorded on each task.
 * Duplicate ids are left to the caller, which sees every source.
 */
export function readTaskFile(
  file: string,
  display: string,
  source: string = display,
  opts: TaskFileOptions = {},
): TaskFileResult {
  const ext = path.extname(file).toLowerCase();
  const format = PARSERS[ext];
  if (!format) {
    return {
      tasks: [],
      issues: [
        `${display}: unsupported task file type "${ext || path.basename(file)}"; use ${Object.keys(PARSERS).join(', ')}`,
      ],
    };
  }
  const maxPromptChars = opts.maxPromptChars ?? DEFAULT_MAX_PROMPT_CHARS;
  let text: string;
  try {
    const guard = taskFileGuard(format.written, maxPromptChars);
    text = readRegularFile(file, 'task file', MAX_TASK_FILE_BYTES, guard).replace(/^\uFEFF/, '');
  } catch (err) {
    if (err instanceof OversizedTaskError) return { tasks: [], issues: [`${display}:${err.line}: ${err.message}`] };
    if (!(err instanceof InputFileError)) throw err;
    const why = ['EISDIR', 'ENOTREG', 'EFBIG', 'EBADLINK'].includes(err.code) ? err.reason : err.code;
    return { tasks: [], issues: [`${display}: cannot read task file (${why})`] };
  }
  const parsed = format.parse(text);
  const result: TaskFileResult = { tasks: [], issues: parsed.issues.map((i) => `${display}:${i.line}: ${i.message}`) };
  for (const raw of parsed.records) {
    const { record, issues } = checkRecord(raw.value);
    const lined = issues.map((i) => ({
      line: i.field === undefined ? raw.line : raw.fieldLine(i.field),
      message: i.message,
    }));
    for (const { line, message } of lined.sort((a, b) => a.line - b.line))
      result.issues.push(`${display}:${line}: ${message}`);
    if (!record) continue;
    if (record.prompt.length > maxPromptChars) {
      const what = `"prompt" is ${record.prompt.length} characters, over tasks.max_prompt_chars (${maxPromptChars})`;
      result.issues.push(`${display}:${raw.fieldLine('prompt')}: ${what}`);
      continue;
    }
    const task: Task = { id: record.id, prompt: record.prompt, metadata: record.metadata, source };
    if (record.reference !== undefined) task.reference = record.reference;
    if (record.category !== undefined) task.category = record.category;
    result.tasks.push({ task, where: `${display}:${raw.line}` });
  }
  return result;
}
