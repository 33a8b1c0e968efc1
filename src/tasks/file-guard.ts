/** The longest a character of a prompt is written: a JSON \uXXXX escape (an astral one is two of them). */
const MAX_SPELLING = 6;
/** Room on a YAML line for what goes around the prompt: indentation, keys, quotes, the task's other fields. */
const YAML_LINE_SLACK = 64 * 1024;

/** A task file holds a string (JSON) or a line (YAML) too long for a task under tasks.max_prompt_chars. */
export class OversizedTaskError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(message);
    this.name = 'OversizedTaskError';
  }
}

/**
 * Watches a task file as it is read (chunk by chunk) and throws an OversizedTaskError at the first string
 * (JSON, JSONL) or line (YAML) longer than any task with a prompt of at most maxPromptChars can be written,
 * so a 50 MB line is refused after its first few hundred kilobytes instead of being read and parsed whole.
 * A shorter one may still hold too long a prompt: readTaskFile checks every parsed prompt exactly.
 */
export function taskFileGuard(format: 'json' | 'yaml', maxPromptChars: number): (chunk: string) => void {
  const cap = `tasks.max_prompt_chars (${maxPromptChars})`;
  const limit = MAX_SPELLING * maxPromptChars;
  return format === 'json' ? jsonGuard(limit, cap) : yamlGuard(limit + YAML_LINE_SLACK, cap);
}

function jsonGuard(limit: number, cap: string): (chunk: string) => void {
  let line = 1;
  let inString = false;
  /** A backslash ended the last chunk: the next one starts with the character it escapes. */
  let escaping = false;
  let startLine = 1;
  let length = 0;
  const special = /["\\\n]/g;
  const grow = (n: number) => {
    length += n;
    if (length > limit) {
      const what = `a string over ${limit} characters as written, longer than a prompt may be under ${cap}`;
      throw new OversizedTaskError(startLine, `${what}; the rest of the file was not read`);
    }
  };
  return (chunk) => {
    let i = 0;
    if (escaping && chunk.length) {
      escaping = false;
      if (chunk[0] !== '\n') {
        grow(1);
        i = 1;
      }
    }
    while (i < chunk.length) {
      special.lastIndex = i;
      const m = special.exec(chunk);
      const at = m ? m.index : chunk.length;
      if (inString) grow(at - i);
      if (!m) return;
      i = at + 1;
      if (m[0] === '\n') {
        // JSON strings never span lines (a newline in one is written \n): a line ends whatever was open.
        line++;
        inString = false;
      } else if (!inString) {
        if (m[0] === '"') [inString, startLine, length] = [true, line, 0];
      } else if (m[0] === '"') {
        inString = false;
      } else {
        // A backslash and the character it escapes, which may be a quote or the next chunk's first.
        grow(1);
        if (i === chunk.length) escaping = true;
        else if (chunk[i] !== '\n') {
          grow(1);
          i++;
        }
      }
    }
  };
}

function yamlGuard(limit: number, cap: string): (chunk: string) => void {
  let line = 1;
  let length = 0;
  return (chunk) => {
    for (let i = 0; i <= chunk.length;) {
      const nl = chunk.indexOf('\n', i);
      length += (nl < 0 ? chunk.length : nl) - i;
      if (length > limit) {
        const what = `a line over ${limit} characters, longer than a task may be written under ${cap}`;
        throw new OversizedTaskError(line, `${what}; the rest of the file was not read`);
      }
      if (nl < 0) return;
      line++;
      length = 0;
      i = nl + 1;
    }
  };
}
