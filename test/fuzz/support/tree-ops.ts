import fc from 'fast-check';
import { keyArb, numberArb, RawText, valueArb, type Hostile } from './values.js';

/**
 * Structural mutations of a parsed document (a config, a task file, a MassGen JSON file). Positions are
 * plain numbers taken modulo the candidates the document has, so one generated op applies to any document.
 */
export type TreeOp =
  | { op: 'set'; at: number; value: Hostile }
  | { op: 'number'; at: number; value: Hostile }
  | { op: 'delete'; at: number }
  | { op: 'rename'; at: number; key: string }
  | { op: 'add'; at: number; key: string; value: Hostile }
  | { op: 'retype'; at: number; to: 'list' | 'map' | 'string' | 'number' | 'null' | 'bool' }
  | { op: 'duplicate'; at: number }
  | { op: 'nest'; at: number; depth: number; list: boolean };

const at = fc.nat({ max: 10_000 });

/** Mostly one op, sometimes none or a few: one hostile change at a time reaches past the first refusal. */
export function fewOps<T>(arb: fc.Arbitrary<T>, none = 1, one = 4, several = 2): fc.Arbitrary<T[]> {
  return fc.oneof(
    { weight: none, arbitrary: fc.constant([] as T[]) },
    { weight: one, arbitrary: fc.tuple(arb).map((x) => [...x]) },
    { weight: several, arbitrary: fc.array(arb, { minLength: 2, maxLength: 4 }) },
  );
}
/** Depths around the nesting cap (64) and beyond it (text ops nest far deeper). */
export const depthArb = fc.constantFrom(2, 10, 62, 63, 64, 65, 100, 300);

export const treeOpArb: fc.Arbitrary<TreeOp> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('set' as const), at, value: valueArb }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('number' as const), at, value: numberArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('delete' as const), at }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('rename' as const), at, key: keyArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('add' as const), at, key: keyArb, value: valueArb }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('retype' as const),
      at,
      to: fc.constantFrom('list', 'map', 'string', 'number', 'null', 'bool'),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('duplicate' as const), at }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('nest' as const), at, depth: depthArb, list: fc.boolean() }) },
);

type Tree = unknown;
type Path = (string | number)[];
interface Node {
  path: Path;
  value: Tree;
}

const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof RawText);

/** Every node of the tree with its path, root first (iterative: mutated trees can be very deep). */
export function nodes(tree: Tree): Node[] {
  const out: Node[] = [];
  const stack: Node[] = [{ path: [], value: tree }];
  while (stack.length) {
    const node = stack.pop()!;
    out.push(node);
    if (node.path.length > 40) continue;
    if (Array.isArray(node.value)) node.value.forEach((v, i) => stack.push({ path: [...node.path, i], value: v }));
    else if (isMap(node.value))
      for (const k of Object.keys(node.value)) stack.push({ path: [...node.path, k], value: node.value[k] });
  }
  return out;
}

/** Sets an own property, whatever its name (`__proto__` included). */
export function put(obj: Record<string, unknown> | unknown[], key: string | number, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

function parentOf(tree: Tree, path: Path): Record<string, unknown> | unknown[] | undefined {
  let node: unknown = tree;
  for (const k of path.slice(0, -1)) node = (node as Record<string | number, unknown>)[k];
  return Array.isArray(node) || isMap(node) ? node : undefined;
}

const pick = <T>(xs: T[], i: number): T | undefined => (xs.length ? xs[i % xs.length] : undefined);

function nested(depth: number, list: boolean, leaf: unknown): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = list ? [v] : { a: v };
  return v;
}

function retyped(v: unknown, to: Extract<TreeOp, { op: 'retype' }>['to']): unknown {
  switch (to) {
    case 'list':
      return [v];
    case 'map':
      return { value: v };
    case 'string':
      return typeof v === 'object' ? (JSON.stringify(v) ?? '') : String(v);
    case 'number':
      return typeof v === 'string' ? Number(v) : 1;
    case 'null':
      return null;
    case 'bool':
      return !v;
  }
}

function clone(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(clone);
  if (!isMap(v)) return v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) put(out, k, clone(v[k]));
  return out;
}

/** Applies one op in place; returns the (possibly replaced) root. */
export function applyTreeOp(tree: Tree, op: TreeOp): Tree {
  const all = nodes(tree);
  const inner = all.filter((n) => n.path.length > 0);
  const replace = (node: Node | undefined, value: unknown): Tree => {
    if (!node) return tree;
    if (!node.path.length) return value;
    put(parentOf(tree, node.path)!, node.path.at(-1)!, value);
    return tree;
  };
  switch (op.op) {
    case 'set':
      return replace(pick(inner, op.at), op.value);
    case 'number':
      return replace(
        pick(
          inner.filter((n) => typeof n.value === 'number'),
          op.at,
        ) ?? pick(inner, op.at),
        op.value,
      );
    case 'retype':
      return replace(pick(inner, op.at), retyped(pick(inner, op.at)?.value, op.to));
    case 'nest':
      return replace(pick(inner, op.at), nested(op.depth, op.list, pick(inner, op.at)?.value ?? null));
    case 'delete': {
      const node = pick(inner, op.at);
      const parent = node && parentOf(tree, node.path);
      if (Array.isArray(parent)) parent.splice(node!.path.at(-1) as number, 1);
      else if (parent) delete parent[node!.path.at(-1) as string];
      return tree;
    }
    case 'rename': {
      const node = pick(
        inner.filter((n) => typeof n.path.at(-1) === 'string'),
        op.at,
      );
      const parent = node && (parentOf(tree, node.path) as Record<string, unknown>);
      if (!parent) return tree;
      delete parent[node!.path.at(-1) as string];
      put(parent, op.key, node!.value);
      return tree;
    }
    case 'add': {
      const map = pick(
        all.filter((n) => isMap(n.value)),
        op.at,
      );
      if (map) put(map.value as Record<string, unknown>, op.key, op.value);
      return tree;
    }
    case 'duplicate': {
      const list = pick(
        all.filter((n) => Array.isArray(n.value) && n.value.length),
        op.at,
      );
      if (list)
        (list.value as unknown[]).push(clone((list.value as unknown[])[op.at % (list.value as unknown[]).length]));
      return tree;
    }
  }
}
