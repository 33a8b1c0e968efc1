/** Evaluates + − × ÷ ^ % and parentheses on numbers; no names, no eval. */
export function calculate(expression: string): number {
  const tokens =
    expression
      .replace(/×/g, '*')
      .replace(/÷/g, '/')
      .replace(/−/g, '-')
      .match(/\d+(?:\.\d+)?(?:e[+-]?\d+)?|[-+*/^%()]|\S/gi) ?? [];
  let i = 0;
  const peek = () => tokens[i];
  const take = (t?: string) => {
    const tok = tokens[i++];
    if (t !== undefined && tok !== t) throw new Error(`expected "${t}" at token ${i}, got "${tok ?? 'end'}"`);
    return tok;
  };
  const primary = (): number => {
    const tok = take();
    if (tok === '(') {
      const v = sum();
      take(')');
      return v;
    }
    if (tok === '-') return -primary();
    if (tok === '+') return primary();
    if (tok !== undefined && /^\d/.test(tok)) return Number(tok);
    throw new Error(`unexpected "${tok ?? 'end of expression'}"`);
  };
  const power = (): number => {
    const base = primary();
    return peek() === '^' ? (take(), base ** power()) : base;
  };
  const product = (): number => {
    let v = power();
    while (peek() === '*' || peek() === '/' || peek() === '%') {
      const op = take();
      const r = power();
      if ((op === '/' || op === '%') && r === 0) throw new Error('division by zero');
      v = op === '*' ? v * r : op === '/' ? v / r : v % r;
    }
    return v;
  };
  const sum = (): number => {
    let v = product();
    while (peek() === '+' || peek() === '-') v = take() === '+' ? v + product() : v - product();
    return v;
  };
  if (!tokens.length) throw new Error('empty expression');
  const value = sum();
  if (i < tokens.length) throw new Error(`unexpected "${tokens[i]}"`);
  return value;
}
