/**
 * Why a parsed JSON value is unsafe to process, or undefined: nesting deeper than `maxNesting` levels
 * (JSON.parse copes, but JSON.stringify, hashing and structured clones recurse and overflow the stack),
 * or an own `__proto__` key (object spreads and zod records turn it into a prototype).
 */
export function unsafeJsonShape(value: unknown, maxNesting: number): string | undefined {
  // Iterative on purpose: a recursive walk would overflow on exactly the input it must refuse.
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth >= maxNesting) return `nested more than ${maxNesting} levels deep`;
    if (!Array.isArray(v) && Object.hasOwn(v, '__proto__')) return 'the key "__proto__" is not allowed';
    for (const x of Object.values(v)) stack.push([x, depth + 1]);
  }
  return undefined;
}
