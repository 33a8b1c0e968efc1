import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * A statement's opening words, upper case as the store writes them. Only string and template literals
 * are read, so prose in comments does not count.
 */
const SQL = new RegExp(
  [
    String.raw`SELECT\s+(\*|DISTINCT\b|COUNT\s*\(|[\w.]+\s*(,|AS\b|FROM\b))`,
    String.raw`INSERT\s+INTO`,
    String.raw`UPDATE\s+\w+\s+SET`,
    String.raw`DELETE\s+FROM`,
    String.raw`(CREATE|ALTER|DROP)\s+(TABLE|INDEX)`,
    String.raw`PRAGMA\s+\w+`,
  ]
    .map((p) => String.raw`\b${p}`)
    .join('|'),
);

export interface SqlFinding {
  file: string;
  line: number;
  text: string;
}

/** The .ts files under src/ of `root`, as `src/...` paths. */
export function sourceFiles(root: string): string[] {
  return fs
    .readdirSync(path.join(root, 'src'), { recursive: true, encoding: 'utf8' })
    .map((f) => `src/${f.split(path.sep).join('/')}`)
    .filter((f) => f.endsWith('.ts'))
    .sort();
}

/**
 * SQL in the string literals of one file, and the ways past the repositories to the database: a `.db`
 * property (the store's handle, as it was once public) and `storeDb` (the handle for store/ and tests).
 */
export function sqlFindings(root: string, file: string): SqlFinding[] {
  const text = fs.readFileSync(path.join(root, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: SqlFinding[] = [];
  const report = (node: ts.Node, text: string) => {
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    found.push({ file, line, text: text.replace(/\s+/g, ' ').slice(0, 100) });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteralLike(node)) {
      if (SQL.test(node.text)) report(node, node.text);
    } else if (ts.isTemplateExpression(node)) {
      // Each substitution read as one word: `SELECT ${columns} FROM ${table}` is a statement too.
      const joined = node.head.text + node.templateSpans.map((t) => `_${t.literal.text}`).join('');
      if (SQL.test(joined)) report(node, node.getText(source));
    } else if (ts.isPropertyAccessExpression(node) && node.name.text === 'db') {
      report(node, node.getText(source));
    } else if (ts.isIdentifier(node) && node.text === 'storeDb') {
      report(node, node.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** What sqlFindings reports in src/ outside src/store/: SQL is written in the store's repositories only. */
export function sqlOutsideStore(root: string): SqlFinding[] {
  return sourceFiles(root)
    .filter((f) => !f.startsWith('src/store/'))
    .flatMap((f) => sqlFindings(root, f));
}
