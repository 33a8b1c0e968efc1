import { Document, isAlias, isMap, isPair, isScalar, isSeq, LineCounter, parseDocument } from 'yaml';

/** Deeper input is refused: everything downstream (env interpolation, zod, hashing, JSON) recurses. */
export const MAX_NESTING = 64;

export interface YamlProblem {
  /** 1-based. */
  line: number;
  col: number;
  message: string;
}

export interface SafeYaml {
  doc: Document.Parsed;
  lines: LineCounter;
  /** Syntax errors, aliases, `__proto__` keys and nesting beyond MAX_NESTING, in file order. */
  problems: YamlProblem[];
}

/**
 * Parses one YAML document and refuses what can make reading it unbounded or unsafe: any alias
 * (`*name`, which also covers undefined and recursive aliases and alias bombs: the rule is simply no
 * aliases, write the value out), nesting deeper than `maxNesting`, and `__proto__` keys (object
 * spreads and zod records turn those into prototypes). Anchors without aliases are harmless and allowed.
 */
export function parseYamlSafely(text: string, maxNesting = MAX_NESTING): SafeYaml {
  const lines = new LineCounter();
  const tooDeep = `nested more than ${maxNesting} levels deep`;
  let doc: Document.Parsed;
  try {
    doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  } catch (err) {
    // Most input too deep for the parser becomes one of its errors (below); some overflows escape it.
    if (!(err instanceof RangeError)) throw err;
    return {
      doc: new Document(null) as Document.Parsed,
      lines,
      problems: [{ ...firstTooDeep(text, maxNesting), message: tooDeep }],
    };
  }
  const at = (offset: number | undefined, message: string): YamlProblem => {
    const pos = lines.linePos(offset ?? 0);
    return { line: pos.line, col: pos.col, message };
  };
  if (doc.errors.length) {
    const problems = doc.errors.map((e) =>
      at(
        e.pos[0],
        /Maximum call stack/.test(e.message) ? tooDeep : `invalid YAML: ${e.message.split('\n')[0] ?? e.message}`,
      ),
    );
    return { doc, lines, problems };
  }
  const problems: YamlProblem[] = [];
  // Iterative on purpose: the point is to survive input that would overflow a recursive walk.
  const stack: [unknown, number][] = [[doc.contents, 0]];
  while (stack.length) {
    const [node, depth] = stack.pop()!;
    if (isAlias(node)) {
      problems.push(
        at(node.range?.[0], `YAML aliases are not supported (*${node.source}): write the value out in full`),
      );
    } else if (isMap(node) || isSeq(node)) {
      if (depth >= maxNesting) {
        problems.push(at(node.range?.[0], tooDeep));
        continue;
      }
      for (const item of node.items) {
        if (isPair(item)) {
          if (isScalar(item.key) && item.key.value === '__proto__')
            problems.push(at(item.key.range?.[0], 'the key "__proto__" is not allowed'));
          stack.push([item.key, depth + 1], [item.value, depth + 1]);
        } else stack.push([item, depth + 1]);
      }
    }
  }
  problems.sort((a, b) => a.line - b.line || a.col - b.col);
  return { doc, lines, problems };
}

/**
 * Where text first nests deeper than max, estimated from the lines (block indentation, `- ` entries,
 * flow brackets) for text too deep for the parser to say where: 1-based, line 1 column 1 when not found.
 */
export function firstTooDeep(text: string, max: number): { line: number; col: number } {
  const indents: number[] = [];
  let flow = 0;
  const rows = text.split(/\r?\n|\r/);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    const start = row.length - row.trimStart().length;
    let levels = 0;
    if (flow === 0 && row.trim() && !row.trimStart().startsWith('#')) {
      while (indents.length && indents.at(-1)! >= start) indents.pop();
      indents.push(start);
      levels = /^(?:- +)*/.exec(row.slice(start))![0].split('-').length - 1;
    }
    for (let c = start; c < row.length; c++) {
      const ch = row[c];
      if (ch === '[' || ch === '{') flow++;
      else if ((ch === ']' || ch === '}') && flow > 0) flow--;
      if (indents.length + levels + flow > max) return { line: i + 1, col: c + 1 };
    }
  }
  return { line: 1, col: 1 };
}
