import path from 'node:path';
import { InputFileError, MiB, readRegularFile } from '../config/input-file.js';
import { checkRecord } from './file-schema.js';
import { parseJsonl, parseYamlTasks, type ParsedFile } from './file-formats.js';
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

const PARSERS: Record<string, (text: string) => ParsedFile> = {
  '.jsonl': parseJsonl,
  '.ndjson': parseJsonl,
  '.yaml': parseYamlTasks,
  '.yml': parseYamlTasks,
  '.json': parseYamlTasks, // a JSON list or {tasks: [...]} is YAML too
};

/**
 * Reads one task file. `display` names it in messages; `source` is recorded on each task.
 * Duplicate ids are left to the caller, which sees every source.
 */
export function readTaskFile(file: string, display: string, source: string = display): TaskFileResult {
  const ext = path.extname(file).toLowerCase();
  const parse = PARSERS[ext];
  if (!parse) {
    return { tasks: [], issues: [`${display}: unsupported task file type "${ext || path.basename(file)}"; use ${Object.keys(PARSERS).join(', ')}`] };
  }
  let text: string;
  try {
    text = readRegularFile(file, 'task file', MAX_TASK_FILE_BYTES).replace(/^\uFEFF/, '');
  } catch (err) {
    if (!(err instanceof InputFileError)) throw err;
    const why = ['EISDIR', 'ENOTREG', 'EFBIG', 'EBADLINK'].includes(err.code) ? err.reason : err.code;
    return { tasks: [], issues: [`${display}: cannot read task file (${why})`] };
  }
  const parsed = parse(text);
  const result: TaskFileResult = { tasks: [], issues: parsed.issues.map((i) => `${display}:${i.line}: ${i.message}`) };
  for (const raw of parsed.records) {
    const { record, issues } = checkRecord(raw.value);
    const lined = issues.map((i) => ({ line: i.field === undefined ? raw.line : raw.fieldLine(i.field), message: i.message }));
    for (const { line, message } of lined.sort((a, b) => a.line - b.line)) result.issues.push(`${display}:${line}: ${message}`);
    if (!record) continue;
    const task: Task = { id: record.id, prompt: record.prompt, metadata: record.metadata, source };
    if (record.reference !== undefined) task.reference = record.reference;
    if (record.category !== undefined) task.category = record.category;
    result.tasks.push({ task, where: `${display}:${raw.line}` });
  }
  return result;
}
