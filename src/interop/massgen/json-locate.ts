/**
 * Locating problems in JSON text, for error messages that name a line and column. Only used once
 * JSON.parse or a schema check has already failed, so it favours clarity over speed.
 */

export interface TextPosition {
  offset: number;
  line: number;
  column: number;
}

export function positionAt(text: string, offset: number): TextPosition {
  const clamped = Math.max(0, Math.min(offset, text.length));
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < clamped; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { offset: clamped, line, column: clamped - lineStart + 1 };
}

/** Deeper than any file MassGen writes (about 10 levels); JSON.parse takes more, but stringifying it again would not. */
export const MAX_JSON_DEPTH = 256;

/**
 * Where the text first opens more than maxDepth nested arrays or objects, or undefined. A linear scan
 * without recursion: run before JSON.parse, so nothing later (schema checks, error positions, JSON.stringify
 * into the store) meets a value nested deeply enough to overflow the stack.
 */
export function findExcessiveNesting(text: string, maxDepth = MAX_JSON_DEPTH): TextPosition | undefined {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 92)
        i++; // backslash: skip the escaped character
      else if (ch === 34) inString = false;
    } else if (ch === 34) {
      inString = true;
    } else if (ch === 91 || ch === 123) {
      if (++depth > maxDepth) return positionAt(text, i);
    } else if (ch === 93 || ch === 125) {
      depth--;
    }
  }
  return undefined;
}

export class JsonSyntaxError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

/** A value's start offset and, for containers, its children's. */
interface Node {
  start: number;
  members?: Map<string, Node>;
  items?: Node[];
}

/**
 * Parses JSON and returns the position tree, or throws JsonSyntaxError at the first error.
 * Accepts exactly RFC 8259 JSON (what JSON.parse accepts).
 */
function parseTree(text: string): Node {
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  const fail = (message: string): never => {
    throw new JsonSyntaxError(message, i);
  };
  const show = (ch: string) => (ch === "'" ? `"'"` : /[\u0000-\u001f]/.test(ch) ? JSON.stringify(ch) : `'${ch}'`);
  const describe = () => (i >= text.length ? 'unexpected end of file' : `unexpected character ${show(text[i]!)}`);
  const literal = (word: string) => {
    if (text.startsWith(word, i)) i += word.length;
    else fail(describe());
  };
  const string = (): string => {
    const start = i;
    i++; // opening quote
    while (i < text.length) {
      const ch = text[i]!;
      if (ch === '"') {
        i++;
        return JSON.parse(text.slice(start, i)) as string;
      }
      if (ch === '\\') {
        const next = text[i + 1];
        if (next === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail('invalid \\u escape in string');
          i += 6;
        } else if (next !== undefined && '"\\/bfnrt'.includes(next)) {
          i += 2;
        } else {
          fail('invalid escape in string');
        }
      } else if (ch.charCodeAt(0) < 0x20) {
        fail('control character in string (newlines inside strings must be escaped)');
      } else {
        i++;
      }
    }
    i = start;
    return fail('unterminated string');
  };
  const number = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m) fail(describe());
    i += m![0].length;
  };
  const value = (depth: number): Node => {
    if (depth > MAX_JSON_DEPTH) fail(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    ws();
    const start = i;
    const ch = text[i];
    if (ch === '{') {
      i++;
      const members = new Map<string, Node>();
      ws();
      if (text[i] === '}') {
        i++;
        return { start, members };
      }
      for (;;) {
        ws();
        if (text[i] !== '"')
          fail(
            text[i] === '}'
              ? 'trailing comma before "}"'
              : `expected a property name in double quotes, found ${describe().replace(/^unexpected /, '')}`,
          );
        const key = string();
        ws();
        if (text[i] !== ':') fail(`expected ":" after property name, found ${describe().replace(/^unexpected /, '')}`);
        i++;
        members.set(key, value(depth + 1));
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') {
          i++;
          return { start, members };
        }
        fail(`expected "," or "}" after a property value, found ${describe().replace(/^unexpected /, '')}`);
      }
    }
    if (ch === '[') {
      i++;
      const items: Node[] = [];
      ws();
      if (text[i] === ']') {
        i++;
        return { start, items };
      }
      for (;;) {
        ws();
        if (text[i] === ']') fail('trailing comma before "]"');
        items.push(value(depth + 1));
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') {
          i++;
          return { start, items };
        }
        fail(`expected "," or "]" after an array element, found ${describe().replace(/^unexpected /, '')}`);
      }
    }
    if (ch === '"') {
      string();
      return { start };
    }
    if (ch === 't') literal('true');
    else if (ch === 'f') literal('false');
    else if (ch === 'n') literal('null');
    else if (ch === '-' || (ch !== undefined && ch >= '0' && ch <= '9')) number();
    else fail(describe());
    return { start };
  };
  if (text.charCodeAt(0) === 0xfeff) i = 1;
  const root = value(0);
  ws();
  if (i < text.length) fail(`unexpected content after the JSON value: ${show(text[i]!)}`);
  return root;
}

/** The first syntax error in text, or undefined when it is valid JSON. */
export function findJsonSyntaxError(text: string): { message: string; position: TextPosition } | undefined {
  try {
    parseTree(text);
    return undefined;
  } catch (err) {
    if (err instanceof JsonSyntaxError) return { message: err.message, position: positionAt(text, err.offset) };
    throw err;
  }
}

/** Where the value at path starts (or the deepest existing part of the path), in valid JSON text. */
export function locateJsonPath(text: string, path: readonly PropertyKey[]): TextPosition {
  let node: Node;
  try {
    node = parseTree(text);
  } catch {
    return positionAt(text, 0);
  }
  for (const key of path) {
    const next = typeof key === 'number' ? node.items?.[key] : node.members?.get(String(key));
    if (!next) break;
    node = next;
  }
  return positionAt(text, node.start);
}
