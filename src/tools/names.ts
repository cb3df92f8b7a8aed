/**
 * Model-facing tool names. Model APIs accept `^[a-zA-Z0-9_-]{1,64}$` and one flat namespace, while
 * MCP tools are named per server and may use dots or be long. A tool is offered as
 * `<server>__<tool>` (`orders__lookup_order`) when that is a valid name and no other tool would get
 * the same one; otherwise as a cleaned, shortened form with a hash of the exact pair
 * (`orders__a_very_long_tool_name_that_goes_on_and_on_and_o_3f9a1c2e`). The name depends only on
 * the pair (and, in the rare clash, on the pairs it clashes with), so it stays the same from one
 * turn to the next and in prompts already cached.
 */
import { createHash } from 'node:crypto';

const MODEL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const HASH_CHARS = 8;

export interface ToolPair {
  server: string;
  tool: string;
}

export class ToolNames {
  private readonly byName = new Map<string, ToolPair>();
  private readonly byPair = new Map<string, string>();

  constructor(pairs: Iterable<ToolPair>) {
    const list = [...pairs];
    const claims = new Map<string, number>();
    for (const p of list) claims.set(plain(p), (claims.get(plain(p)) ?? 0) + 1);
    for (const p of list) {
      const simple = plain(p);
      let name = MODEL_NAME.test(simple) && claims.get(simple) === 1 ? simple : hashed(p);
      // A hashed name that happens to equal another tool's plain one: hash once more.
      if (this.byName.has(name)) name = hashed({ server: p.server, tool: `${p.tool}\u0000` });
      this.byName.set(name, p);
      this.byPair.set(key(p), name);
    }
  }

  nameOf(server: string, tool: string): string | undefined {
    return this.byPair.get(key({ server, tool }));
  }

  resolve(name: string): ToolPair | undefined {
    const p = this.byName.get(name);
    return p ? { ...p } : undefined;
  }
}

function plain(p: ToolPair): string {
  return `${p.server}__${p.tool}`;
}

function key(p: ToolPair): string {
  return `${p.server}\u0000${p.tool}`;
}

function hashed(p: ToolPair): string {
  const digest = createHash('sha256').update(key(p)).digest('hex').slice(0, HASH_CHARS);
  const clean = plain(p).replace(/[^a-zA-Z0-9_-]/g, '_');
  return `${clean.slice(0, 64 - HASH_CHARS - 1)}_${digest}`;
}
