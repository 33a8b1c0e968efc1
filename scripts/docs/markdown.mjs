// Shared pieces of the generated references: table cells, and the generated region of a hand-written page.

export const BEGIN = '<!-- BEGIN GENERATED: do not edit by hand; `npm run docs` rewrites it -->';
export const END = '<!-- END GENERATED -->';

/**
 * A table cell: `|` escaped everywhere (GitHub ends a cell at one even inside code) and `<` outside code
 * spans, where `<name>` would otherwise be read as an HTML tag and vanish; line breaks become spaces.
 */
export function cell(text) {
  return String(text)
    .replace(/\s*\n\s*/g, ' ')
    .split('`')
    .map((part, i) => (i % 2 ? part : part.replace(/</g, '&lt;')).replace(/\|/g, '\\|'))
    .join('`');
}

/** A Markdown table of rows of cells (already escaped). */
export function table(head, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

/** `page` with the text between its BEGIN and END markers replaced by `generated`. */
export function replaceGenerated(page, generated, file) {
  const start = page.indexOf(BEGIN);
  const end = page.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${file}: the markers ${BEGIN} and ${END} are missing or out of order`);
  return `${page.slice(0, start + BEGIN.length)}\n\n${generated.trim()}\n\n${page.slice(end)}`;
}

/** A code span in a table cell: only `|` needs escaping there. */
export function code(text) {
  return `\`${String(text).replace(/\|/g, '\\|')}\``;
}
