import fs from 'node:fs';
import path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import type { z } from 'zod';
import { UserError } from '../../errors.js';
import { findJsonSyntaxError, locateJsonPath, type TextPosition } from './json-locate.js';

/** A MassGen log file that cannot be read as MassGen writes it: names the file and, when known, the line and column. */
export class MassgenInputError extends UserError {
  constructor(readonly file: string, readonly problem: string, readonly position?: Pick<TextPosition, 'line' | 'column'>) {
    super(`${file}${position ? `:${position.line}:${position.column}` : ''}: ${problem}`);
    this.name = 'MassgenInputError';
  }
}

/** Paths in messages are shown relative to the directory the user named, when inside it. */
export class FileReader {
  constructor(private readonly base: string) {}

  display(file: string): string {
    const rel = path.relative(this.base, file);
    return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : file;
  }

  exists(file: string): boolean {
    return fs.existsSync(file);
  }

  text(file: string): string {
    try {
      return fs.readFileSync(file, 'utf8');
    } catch (err) {
      throw new MassgenInputError(this.display(file), `cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  }

  /** Parses JSON and checks it against schema; errors carry the file, line and column. */
  json<T>(file: string, schema: z.ZodType<T>, what: string): T {
    const text = this.text(file);
    return this.parseJson(file, text, schema, what);
  }

  parseJson<T>(file: string, text: string, schema: z.ZodType<T>, what: string): T {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      const found = findJsonSyntaxError(text);
      throw new MassgenInputError(this.display(file), `invalid JSON: ${found?.message ?? (err as Error).message}`, found?.position ?? { line: 1, column: 1 });
    }
    const result = schema.safeParse(value);
    if (result.success) return result.data;
    const issue = result.error.issues[0]!;
    const where = issue.path.length ? `${formatPath(issue.path)}: ` : '';
    throw new MassgenInputError(this.display(file), `not a MassGen ${what}: ${where}${issue.message}`, locateJsonPath(text, issue.path));
  }

  yaml(file: string): unknown {
    const text = this.text(file);
    const lines = new LineCounter();
    const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: false });
    const err = doc.errors[0];
    if (err) {
      const pos = lines.linePos(err.pos[0]);
      throw new MassgenInputError(this.display(file), `invalid YAML: ${err.message.split('\n')[0]}`, { line: pos.line, column: pos.col });
    }
    return doc.toJS() as unknown;
  }
}

export function formatPath(p: readonly PropertyKey[]): string {
  return p.reduce<string>((acc, k) => (typeof k === 'number' ? `${acc}[${k}]` : acc ? `${acc}.${String(k)}` : String(k)), '');
}
