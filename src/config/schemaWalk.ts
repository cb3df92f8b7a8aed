/**
 * Reading the config schema itself, as data: which schema sits at a key path, which keys a
 * mapping allows, and which scalar kinds a value takes. The loader uses it to convert text from
 * the environment (`port: ${PORT}`) and to suggest keys for a misspelt one. It looks into zod's
 * `def` objects only as far as the `SchemaNode` shape says.
 */

/** A zod schema as far as the config loader looks into it. */
export interface SchemaNode {
  def: { type: string; innerType?: SchemaNode; in?: SchemaNode; options?: readonly SchemaNode[]; shape?: Record<string, SchemaNode>; element?: SchemaNode; valueType?: SchemaNode };
}

/** The schema below wrappers (default, optional, nullable, a transform's input). */
function unwrap(node: SchemaNode | undefined): SchemaNode | undefined {
  let n = node;
  for (let i = 0; n && i < 10; i++) {
    const d = n.def;
    if (d.type === 'default' || d.type === 'prefault' || d.type === 'optional' || d.type === 'nullable' || d.type === 'readonly') n = d.innerType;
    else if (d.type === 'pipe') n = d.in;
    else return n;
  }
  return n;
}

/** Which scalar kinds a schema takes. An unknown kind counts as text, so nothing is converted. */
function scalarKinds(node: SchemaNode | undefined, out = { text: false, number: false, boolean: false, null: false }, depth = 0) {
  if (!node || depth > 10) {
    out.text = true;
    return out;
  }
  const t = node.def.type;
  if (t === 'nullable') out.null = true;
  if (t === 'default' || t === 'prefault' || t === 'optional' || t === 'nullable' || t === 'readonly') return scalarKinds(node.def.innerType, out, depth + 1);
  if (t === 'pipe') return scalarKinds(node.def.in, out, depth + 1);
  if (t === 'union') {
    for (const o of node.def.options ?? []) scalarKinds(o, out, depth + 1);
    return out;
  }
  if (t === 'number' || t === 'int') out.number = true;
  else if (t === 'boolean') out.boolean = true;
  else if (t === 'null') out.null = true;
  else out.text = true;
  return out;
}

/** The schema of `key` inside a mapping, list or record schema (below its wrappers). */
export function childSchema(node: SchemaNode | undefined, key: string | number): SchemaNode | undefined {
  const n = unwrap(node);
  if (!n) return undefined;
  if (n.def.type === 'object') return n.def.shape?.[String(key)];
  if (n.def.type === 'array') return n.def.element;
  if (n.def.type === 'record') return n.def.valueType;
  return undefined;
}

/** Text that reads as a number (the forms YAML would read as one). */
const NUMBER = /^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;

/** Text from the environment, as the schema wants it; left as text when it does not read as one. */
export function coerce(text: string, schema: SchemaNode | undefined): unknown {
  const kinds = scalarKinds(schema);
  if (kinds.text) return text;
  const t = text.trim();
  if (kinds.number && NUMBER.test(t)) return Number(t);
  if (kinds.boolean && /^(true|false)$/i.test(t)) return t.toLowerCase() === 'true';
  if (kinds.null && t === '') return null;
  return text;
}

/** The keys the schema allows in the mapping at `path` (none when it is not a fixed mapping). */
export function keysAt(root: unknown, path: ReadonlyArray<PropertyKey>): string[] {
  let node = root as SchemaNode | undefined;
  for (const seg of path) node = childSchema(node, typeof seg === 'number' ? seg : String(seg));
  const n = unwrap(node);
  return n?.def.type === 'object' ? Object.keys(n.def.shape ?? {}) : [];
}
