import { isAlias, isMap, isPair, isScalar, isSeq, type Document, type Node } from 'yaml';

/**
 * Checks a parsed YAML document before it is converted to a value. MassGen writes execution_metadata.yaml
 * with PyYAML's yaml.dump, which emits an anchor and aliases (&id001 / *id001) whenever the user's config
 * shares one object between agents (a YAML anchor in the config), so aliases to an anchor defined earlier
 * are MassGen's format and are accepted. Refused: an alias with no anchor before it, an alias inside the
 * node it names (a cycle), nesting deeper than MAX_YAML_DEPTH and documents whose aliases expand to more
 * than MAX_YAML_NODES nodes (an "alias bomb").
 */
export const MAX_YAML_DEPTH = 128;
export const MAX_YAML_NODES = 100_000;

/** A refused node: its offset in the text and what is wrong with it. */
export class YamlProblem extends Error {
  constructor(
    readonly offset: number,
    message: string,
  ) {
    super(message);
  }
}

export function findYamlAliasProblem(doc: Document): YamlProblem | undefined {
  const anchors = new Map<string, Node>();
  const open = new Set<Node>();
  const sizes = new Map<Node, number>();
  let total = 0;
  const fail = (node: { range?: [number, number, number] | null }, message: string): never => {
    throw new YamlProblem(node.range?.[0] ?? 0, message);
  };

  /** Walks in document order (as PyYAML resolves aliases) and returns the node's expanded size. */
  const walk = (node: unknown, depth: number): number => {
    if (depth > MAX_YAML_DEPTH) fail(node as Node, `nested deeper than ${MAX_YAML_DEPTH} levels`);
    if (isAlias(node)) {
      const target = anchors.get(node.source);
      if (!target) return fail(node, `alias *${node.source} has no anchor &${node.source} before it`);
      if (open.has(target)) return fail(node, `alias *${node.source} is inside the node it names (a recursive alias)`);
      const size = sizes.get(target) ?? 1;
      total += size;
      if (total > MAX_YAML_NODES)
        fail(node, `aliases expand the document past ${MAX_YAML_NODES} nodes (an alias bomb?)`);
      return size;
    }
    if (!isMap(node) && !isSeq(node) && !isScalar(node)) return 0;
    if (node.anchor) anchors.set(node.anchor, node);
    total += 1;
    let size = 1;
    if (!isScalar(node)) {
      open.add(node);
      for (const item of node.items as unknown[]) {
        if (isPair(item)) size += walk(item.key, depth + 1) + walk(item.value, depth + 1);
        else size += walk(item, depth + 1);
      }
      open.delete(node);
    }
    sizes.set(node, size);
    return size;
  };

  try {
    walk(doc.contents, 0);
    return undefined;
  } catch (err) {
    if (err instanceof YamlProblem) return err;
    throw err;
  }
}
