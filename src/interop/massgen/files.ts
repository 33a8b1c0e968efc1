import fs from 'node:fs';
import path from 'node:path';
import { LineCounter, parseDocument, type Document } from 'yaml';
import type { z } from 'zod';
import { firstTooDeep } from '../../config/safe-yaml.js';
import { UserError } from '../../errors.js';
import {
  findExcessiveNesting,
  findJsonSyntaxError,
  locateJsonPath,
  MAX_JSON_DEPTH,
  type TextPosition,
} from './json-locate.js';
import { findYamlAliasProblem } from './yaml-aliases.js';

/** A MassGen log file that cannot be read as MassGen writes it: names the file and, when known, the line and column. */
export class MassgenInputError extends UserError {
  constructor(
    readonly file: string,
    readonly problem: string,
    readonly position?: Pick<TextPosition, 'line' | 'column'>,
  ) {
    super(`${file}${position ? `:${position.line}:${position.column}` : ''}: ${problem}`);
    this.name = 'MassgenInputError';
  }
}

const isInside = (dir: string, file: string) => {
  const rel = path.relative(dir, file);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
};

function kindOf(st: fs.Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

const code = (err: unknown) => (err as NodeJS.ErrnoException).code ?? String(err);

/**
 * Reads MassGen's files: only regular files (a FIFO or device is refused before it is opened, so nothing
 * hangs), and, for a reader made `within` a log directory, only files whose real path stays inside it (a
 * link in a log must not pull another file's content into the store). Paths in messages are shown relative
 * to the directory the user named, when inside it.
 */
export class FileReader {
  private readonly realBoundary: string | null;

  constructor(
    private readonly base: string,
    private readonly boundary: string | null = null,
  ) {
    this.realBoundary = boundary === null ? null : realpathOr(boundary);
  }

  /** The same reader, refusing files that resolve outside dir. */
  within(dir: string): FileReader {
    return new FileReader(this.base, dir);
  }

  display(file: string): string {
    const rel = path.relative(this.base, file);
    return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : file;
  }

  /** Whether anything is at file: a link that leads nowhere counts, so reading it reports it instead of taking it as absent. */
  exists(file: string): boolean {
    try {
      fs.lstatSync(file);
      return true;
    } catch {
      return false;
    }
  }

  text(file: string): string {
    const real = this.regularFile(file);
    let fd: number;
    try {
      // O_NOFOLLOW | O_NONBLOCK: if the checked file is swapped for a link or a FIFO meanwhile, open neither follows nor waits.
      fd = fs.openSync(real, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    } catch (err) {
      throw new MassgenInputError(this.display(file), `cannot read: ${code(err)}`);
    }
    try {
      const st = fs.fstatSync(fd);
      if (!st.isFile()) throw new MassgenInputError(this.display(file), `${kindOf(st)}, not a regular file: refused`);
      return fs.readFileSync(fd, 'utf8');
    } catch (err) {
      if (err instanceof MassgenInputError) throw err;
      throw new MassgenInputError(this.display(file), `cannot read: ${code(err)}`);
    } finally {
      fs.closeSync(fd);
    }
  }

  /** The real path of file, checked with stat before anything opens it. */
  private regularFile(file: string): string {
    let real: string;
    let st: fs.Stats;
    try {
      real = fs.realpathSync(file);
      st = fs.statSync(real);
    } catch (err) {
      const link = linkTarget(file);
      throw new MassgenInputError(
        this.display(file),
        link === null ? `cannot read: ${code(err)}` : `a link to ${link}, which leads nowhere (${code(err)}): refused`,
      );
    }
    if (this.boundary !== null && !isInside(this.realBoundary!, real)) {
      throw new MassgenInputError(
        this.display(file),
        `a link to ${real}, outside the imported log directory ${this.display(this.boundary)}: refused`,
      );
    }
    if (!st.isFile()) throw new MassgenInputError(this.display(file), `${kindOf(st)}, not a regular file: refused`);
    return real;
  }

  /** Parses JSON and checks it against schema; errors carry the file, line and column. */
  json<T>(file: string, schema: z.ZodType<T>, what: string): T {
    const text = this.text(file);
    return this.parseJson(file, text, schema, what);
  }

  parseJson<T>(file: string, text: string, schema: z.ZodType<T>, what: string): T {
    const deep = findExcessiveNesting(text);
    if (deep)
      throw new MassgenInputError(
        this.display(file),
        `invalid JSON: nested deeper than ${MAX_JSON_DEPTH} levels`,
        deep,
      );
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      const found = findJsonSyntaxError(text);
      throw new MassgenInputError(
        this.display(file),
        `invalid JSON: ${found?.message ?? (err as Error).message}`,
        found?.position ?? { line: 1, column: 1 },
      );
    }
    const result = schema.safeParse(value);
    if (result.success) return result.data;
    const issue = result.error.issues[0]!;
    const where = issue.path.length ? `${formatPath(issue.path)}: ` : '';
    throw new MassgenInputError(
      this.display(file),
      `not a MassGen ${what}: ${where}${issue.message}`,
      locateJsonPath(text, issue.path),
    );
  }

  yaml(file: string): unknown {
    const text = this.text(file);
    const lines = new LineCounter();
    let doc: Document.Parsed;
    try {
      doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: false });
    } catch (err) {
      // Text nested deeply enough can overflow the parser's own stack, outside its error reporting.
      if (!(err instanceof RangeError)) throw err;
      const at = firstTooDeep(text, MAX_JSON_DEPTH);
      throw new MassgenInputError(this.display(file), `invalid YAML: nested more than ${MAX_JSON_DEPTH} levels deep`, {
        line: at.line,
        column: at.col,
      });
    }
    const err = doc.errors[0];
    if (err) {
      const pos = lines.linePos(err.pos[0]);
      throw new MassgenInputError(this.display(file), `invalid YAML: ${err.message.split('\n')[0]}`, {
        line: pos.line,
        column: pos.col,
      });
    }
    const problem = findYamlAliasProblem(doc);
    if (problem) {
      const pos = lines.linePos(problem.offset);
      throw new MassgenInputError(this.display(file), `invalid YAML: ${problem.message}`, {
        line: pos.line,
        column: pos.col,
      });
    }
    // Aliases are checked above (defined, not recursive, bounded expansion), so the library's own alias cap is not needed.
    return doc.toJS({ maxAliasCount: -1 }) as unknown;
  }
}

function linkTarget(file: string): string | null {
  try {
    return fs.readlinkSync(file);
  } catch {
    return null;
  }
}

function realpathOr(dir: string): string {
  try {
    return fs.realpathSync(dir);
  } catch {
    return path.resolve(dir);
  }
}

export function formatPath(p: readonly PropertyKey[]): string {
  return p.reduce<string>(
    (acc, k) => (typeof k === 'number' ? `${acc}[${k}]` : acc ? `${acc}.${String(k)}` : String(k)),
    '',
  );
}
