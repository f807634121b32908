/**
 * The protocol's schema (`boopiter_ext/faces/protocol.schema.json`) as the page's tests read it: a checker and a
 * generator for the few JSON Schema keywords it uses (tests/test_protocol_schema.py holds it to those), so the page
 * is tested against the same file the kernel is, with no validator to install.
 */

import raw from '../../../boopiter_ext/faces/protocol.schema.json';

export type Node = { [key: string]: any };

export const SCHEMA = raw as unknown as { $defs: { [name: string]: Node } };
export const DEFS = SCHEMA.$defs;

/** The definitions of one direction (`kernel`, `frontend`) or of the bundles (`bundle`), by name. */
export function defsOf(prefix: 'kernel' | 'frontend' | 'bundle'): string[] {
  return Object.keys(DEFS)
    .filter(k => k.startsWith(`${prefix}.`))
    .sort();
}

/** The top-level fields of a definition the page does not read (`x-page-ignores`: a bundle's version). */
export function ignored(name: string): string[] {
  const props = DEFS[name].properties ?? {};
  return Object.keys(props).filter(k => props[k]['x-page-ignores'] === true);
}

const KNOWN = new Set([
  '$ref', 'type', 'const', 'enum', 'properties', 'required', 'additionalProperties', 'items', 'prefixItems', 'minItems',
  'maxItems', 'minLength', 'minimum', 'minProperties', 'oneOf', 'description', 'title', 'examples', 'x-mime',
  'x-page-ignores'
]);

function resolve(node: Node): Node {
  for (const k of Object.keys(node)) {
    if (!KNOWN.has(k)) {
      throw new Error(`the schema uses \`${k}\`, which this checker does not read`);
    }
  }
  if (node.$ref) {
    const name = String(node.$ref).replace(/^#\/\$defs\//, '');
    if (!(name in DEFS)) {
      throw new Error(`no definition ${node.$ref}`);
    }
    return resolve(DEFS[name]);
  }
  return node;
}

const isObject = (v: unknown): v is { [k: string]: unknown } => typeof v === 'object' && v !== null && !Array.isArray(v);

function typed(t: string, v: unknown): boolean {
  switch (t) {
    case 'string':
      return typeof v === 'string';
    case 'number':
      return typeof v === 'number' && Number.isFinite(v);
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v);
    case 'boolean':
      return typeof v === 'boolean';
    case 'null':
      return v === null;
    case 'array':
      return Array.isArray(v);
    case 'object':
      return isObject(v);
    default:
      throw new Error(`unknown type ${t}`);
  }
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function check(schema: Node, v: unknown, path: string, out: string[]): void {
  const node = resolve(schema);
  const at = path || '(top)';
  if ('const' in node && !same(node.const, v)) {
    out.push(`${at}: must be ${JSON.stringify(node.const)}`);
  }
  if (node.enum && !node.enum.some((e: unknown) => same(e, v))) {
    out.push(`${at}: must be one of ${JSON.stringify(node.enum)}`);
  }
  if (node.type) {
    const types: string[] = Array.isArray(node.type) ? node.type : [node.type];
    if (!types.some(t => typed(t, v))) {
      out.push(`${at}: must be ${types.join(' or ')}`);
      return;
    }
  }
  if (node.oneOf) {
    const fits = node.oneOf.filter((alt: Node) => problems(alt, v).length === 0).length;
    if (fits !== 1) {
      out.push(`${at}: fits ${fits} of the ${node.oneOf.length} alternatives, not one`);
    }
  }
  if (isObject(v)) {
    const props: Node = node.properties ?? {};
    for (const k of node.required ?? []) {
      if (!(k in v)) {
        out.push(`${at}: \`${k}\` is missing`);
      }
    }
    if (node.minProperties !== undefined && Object.keys(v).length < node.minProperties) {
      out.push(`${at}: fewer than ${node.minProperties} fields`);
    }
    for (const [k, value] of Object.entries(v)) {
      if (k in props) {
        check(props[k], value, `${path}/${k}`, out);
      } else if (node.additionalProperties === false) {
        out.push(`${at}: \`${k}\` is not a field of it`);
      } else if (isObject(node.additionalProperties)) {
        check(node.additionalProperties, value, `${path}/${k}`, out);
      }
    }
  }
  if (Array.isArray(v)) {
    const prefix: Node[] = node.prefixItems ?? [];
    v.forEach((item, i) => {
      const s = i < prefix.length ? prefix[i] : node.items;
      if (s) {
        check(s, item, `${path}/${i}`, out);
      }
    });
    if (node.minItems !== undefined && v.length < node.minItems) {
      out.push(`${at}: fewer than ${node.minItems} items`);
    }
    if (node.maxItems !== undefined && v.length > node.maxItems) {
      out.push(`${at}: more than ${node.maxItems} items`);
    }
  }
  if (typeof v === 'string' && node.minLength !== undefined && v.length < node.minLength) {
    out.push(`${at}: shorter than ${node.minLength}`);
  }
  if (typeof v === 'number' && node.minimum !== undefined && v < node.minimum) {
    out.push(`${at}: below ${node.minimum}`);
  }
}

/** What is wrong with `value` as a `schema` (a node, or a definition's name): [] when nothing is. */
export function problems(schema: Node | string, value: unknown): string[] {
  const out: string[] = [];
  check(typeof schema === 'string' ? { $ref: `#/$defs/${schema}` } : schema, value, '', out);
  return out;
}

/**
 * An instance of `schema` with every field it may have, each holding a value a reader cannot mistake for a default
 * (text named after its field, `true`, numbers above zero): a field a reader drops or renames shows.
 */
export function example(schema: Node | string, name = 'value'): unknown {
  const outer = typeof schema === 'string' ? DEFS[schema] : schema;
  if (outer.examples?.length) {
    return outer.examples[0];
  }
  const node = resolve(outer);
  if (node.examples?.length) {
    return node.examples[0];
  }
  if ('const' in node) {
    return node.const;
  }
  if (node.enum) {
    return node.enum[0];
  }
  if (node.oneOf) {
    const alt = node.oneOf.find((a: Node) => resolve(a).type !== 'null');
    return example(alt, name);
  }
  const type: string = Array.isArray(node.type) ? node.type.find((t: string) => t !== 'null') : node.type;
  switch (type) {
    case 'object': {
      const out: { [k: string]: unknown } = {};
      for (const [k, sub] of Object.entries<Node>(node.properties ?? {})) {
        out[k] = example(sub, k);
      }
      if (!node.properties && isObject(node.additionalProperties)) {
        out[`${name}-key`] = example(node.additionalProperties, name);
      }
      return out;
    }
    case 'array':
      if (node.prefixItems) {
        return node.prefixItems.map((s: Node, i: number) => example(s, `${name}-${i}`));
      }
      return Array.from({ length: Math.max(1, node.minItems ?? 0) }, (_, i) => example(node.items, `${name}-${i}`));
    case 'string':
      return `${name} text`;
    case 'integer':
      return Math.max(node.minimum ?? 0, 3);
    case 'number':
      return Math.max(node.minimum ?? 0, 2.5);
    case 'boolean':
      return true;
    default:
      throw new Error(`no example for ${JSON.stringify(node)}`);
  }
}

const empty = (v: unknown) =>
  v === undefined || v === false || v === '' || v === 0 || (Array.isArray(v) && !v.length) || (isObject(v) && !Object.keys(v).length);

/**
 * Where `read` (what a reader made of `sent`) lost something of it: a field dropped, renamed or changed. A field the
 * reader adds must be a default (false, '', 0, empty): the kernel leaves out optional fields when they are empty.
 */
export function losses(read: unknown, sent: unknown, path = ''): string[] {
  const at = path || '(top)';
  if (isObject(sent)) {
    if (!isObject(read)) {
      return [`${at}: read as ${JSON.stringify(read)}`];
    }
    const out: string[] = [];
    for (const [k, v] of Object.entries(sent)) {
      out.push(...(k in read ? losses(read[k], v, `${path}/${k}`) : [`${path}/${k}: dropped`]));
    }
    for (const [k, v] of Object.entries(read)) {
      if (!(k in sent) && !empty(v)) {
        out.push(`${path}/${k}: added as ${JSON.stringify(v)}`);
      }
    }
    return out;
  }
  if (Array.isArray(sent)) {
    if (!Array.isArray(read) || read.length !== sent.length) {
      return [`${at}: ${JSON.stringify(sent).slice(0, 200)} read as ${JSON.stringify(read).slice(0, 200)}`];
    }
    return sent.flatMap((v, i) => losses(read[i], v, `${path}/${i}`));
  }
  return read === sent ? [] : [`${at}: ${JSON.stringify(sent)} read as ${JSON.stringify(read)}`];
}
