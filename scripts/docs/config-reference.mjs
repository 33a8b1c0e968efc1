// The configuration reference (docs/configuration.md) from the config's JSON Schema: one table per section,
// a row per key with its type, default and the schema's description.
import YAML from 'yaml';
import { cell, code, table } from './markdown.mjs';

/** Defaults longer than this go below the table as YAML instead of into the cell. */
const LONG_DEFAULT = 60;

/** The generated part of docs/configuration.md for `schema` (z.toJSONSchema of configSchema, io: input). */
export function configReference(schema) {
  const out = [];
  for (const [section, node] of Object.entries(schema.properties)) {
    if (section === '$schema') continue;
    const rows = [];
    const long = [];
    keyRows(node, section, rows, long, true);
    out.push(`### \`${section}\``, '');
    if (node.description) out.push(cell(node.description), '');
    const cells = rows.map((r) => [code(r.key), r.type, r.default, r.text]);
    out.push(table(['key', 'type', 'default', 'description'], cells), '');
    for (const { key, value } of long) {
      out.push(`Default of \`${key}\`:`, '', '```yaml', YAML.stringify(value).trimEnd(), '```', '');
    }
  }
  return out.join('\n');
}

function keyRows(node, key, rows, long, top = false, required = false) {
  const add = (type, note = '') => {
    const text = [node.description, note].filter(Boolean).join('; ');
    let dflt = '';
    if (node.default !== undefined && !isEmptyObject(node.default)) {
      const shown = JSON.stringify(node.default);
      if (shown.length > LONG_DEFAULT) {
        long.push({ key, value: node.default });
        dflt = 'below';
      } else dflt = code(typeof node.default === 'string' ? node.default || '""' : shown);
    } else if (required) dflt = 'required';
    rows.push({ key, type, default: dflt, text: cell(text) });
  };
  const branches = node.anyOf ?? node.oneOf;
  if (node.properties) {
    const open = node.additionalProperties !== undefined && node.additionalProperties !== false;
    const note = open ? 'also takes keys not listed here, passed on as they are' : '';
    if (!top && (node.description || open)) add('object', note);
    else if (top && open) add('object', note);
    for (const [k, v] of Object.entries(node.properties)) {
      keyRows(v, `${key}.${k}`, rows, long, false, node.required?.includes(k));
    }
  } else if (isRecord(node) && node.additionalProperties.properties) {
    add(`map of name → object`);
    keyRows(node.additionalProperties, `${key}.<name>`, rows, long);
  } else if (isRecord(node) && objectBranches(node.additionalProperties)) {
    add(`map of name → ${unionShape(objectBranches(node.additionalProperties))}`);
    unionRows(objectBranches(node.additionalProperties), `${key}.<name>`, rows, long);
  } else if (node.type === 'array' && (node.items?.properties || objectBranches(node.items))) {
    const items = objectBranches(node.items) ?? [node.items];
    add(`list of ${items.length > 1 ? unionShape(items) : 'objects'}${countBounds(node)}`);
    unionRows(items, `${key}[]`, rows, long);
  } else if (branches && branches.every((b) => b.properties)) {
    add(unionShape(branches));
    unionRows(branches, key, rows, long);
  } else add(typeOf(node));
}

/** The rows of each object branch, a key found in several once (its types joined). */
function unionRows(branches, key, rows, long) {
  const start = rows.length;
  for (const b of branches)
    for (const [k, v] of Object.entries(b.properties)) {
      const sub = [];
      keyRows(v, `${key}.${k}`, sub, long, false, b.required?.includes(k));
      for (const r of sub) {
        const same = rows.slice(start).find((x) => x.key === r.key);
        if (!same) rows.push(r);
        else if (same.type !== r.type) same.type = `${same.type} \\| ${r.type}`;
      }
    }
}

function unionShape(branches) {
  return `one of ${branches.map((b) => `{${Object.keys(b.properties).join(', ')}}`).join(' or ')}`;
}

function objectBranches(node) {
  const branches = node?.anyOf ?? node?.oneOf;
  return branches?.every((b) => b.properties) ? branches : undefined;
}

function isRecord(node) {
  return node.type === 'object' && typeof node.additionalProperties === 'object' && !node.properties;
}

function isEmptyObject(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0;
}

/** A scalar, list or map type as a reader writes it, with its bounds. */
export function typeOf(node) {
  if (node.const !== undefined) return code(JSON.stringify(node.const));
  if (node.enum) return node.enum.map((v) => code(String(v))).join(' \\| ');
  const branches = node.anyOf ?? node.oneOf;
  if (branches) return branches.map(typeOf).join(' or ');
  switch (node.type) {
    case 'array':
      return `list of ${typeOf(node.items ?? {})}${countBounds(node)}`;
    case 'object': {
      if (!isRecord(node)) return 'object';
      const keys = node.propertyNames?.enum ? `(${node.propertyNames.enum.join(', ')})` : 'name';
      return `map of ${keys} → ${typeOf(node.additionalProperties)}`;
    }
    case 'integer':
    case 'number':
      return `${node.type}${numberBounds(node)}`;
    case 'string':
      return node.format === 'uri' ? 'URL' : 'string';
    case undefined:
      return 'any';
    default:
      return node.type;
  }
}

function numberBounds(n) {
  const int = n.type === 'integer';
  let lo = n.minimum,
    hi = n.maximum,
    loX,
    hiX;
  if (n.exclusiveMinimum !== undefined) {
    if (int) lo = n.exclusiveMinimum + 1;
    else loX = n.exclusiveMinimum;
  }
  if (n.exclusiveMaximum !== undefined) {
    if (int) hi = n.exclusiveMaximum - 1;
    else hiX = n.exclusiveMaximum;
  }
  if (lo !== undefined && hi !== undefined) return ` ${num(lo)}${lo < 0 ? ' to ' : '–'}${num(hi)}`;
  const parts = [
    lo !== undefined && `≥ ${num(lo)}`,
    loX !== undefined && `> ${num(loX)}`,
    hi !== undefined && `≤ ${num(hi)}`,
    hiX !== undefined && `< ${num(hiX)}`,
  ].filter(Boolean);
  return parts.length ? ` ${parts.join(', ')}` : '';
}

function countBounds(n) {
  if (n.minItems !== undefined && n.maxItems !== undefined) return ` (${n.minItems}–${n.maxItems})`;
  if (n.minItems) return ` (at least ${n.minItems})`;
  return n.maxItems !== undefined ? ` (at most ${n.maxItems})` : '';
}

/** 86400000 → 86,400,000; fractions and small numbers as they are. */
function num(x) {
  return Number.isInteger(x) && Math.abs(x) >= 10_000 ? String(x).replace(/\B(?=(\d{3})+(?!\d))/g, ',') : String(x);
}
