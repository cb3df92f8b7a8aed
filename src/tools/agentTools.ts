/**
 * Which tools an agent may call, from its `agents[].tools` entries: a server gives all its tools
 * (sorted by name), `server.tool` one tool. The order is the entries' order, then the name order
 * within a server, so the list a model sees is the same from turn to turn (and stays in the
 * provider's prompt cache). An entry naming a tool its server does not list is reported, by its
 * key, once the server's list is known.
 */
import type { ListedTool, MissingToolEntry } from './types.js';

export interface AgentToolsDef {
  id: string;
  tools?: readonly string[] | undefined;
}

/** `search.web_search` → server `search`, tool `web_search`; server names have no dots, tool names may. */
export function splitEntry(entry: string): { server: string; tool: string | undefined } {
  const dot = entry.indexOf('.');
  return dot < 0 ? { server: entry, tool: undefined } : { server: entry.slice(0, dot), tool: entry.slice(dot + 1) };
}

/** The agent's tools from servers that are up (`listOf` answers undefined for the others), deduplicated. */
export function selectTools(entries: readonly string[], listOf: (server: string) => readonly ListedTool[] | undefined): Array<{ server: string; tool: ListedTool }> {
  const out: Array<{ server: string; tool: ListedTool }> = [];
  const seen = new Set<string>();
  const push = (server: string, tool: ListedTool) => {
    const k = `${server}\u0000${tool.name}`;
    if (seen.has(k)) return;
    seen.add(k);
    out.push({ server, tool });
  };
  for (const entry of entries) {
    const { server, tool } = splitEntry(entry);
    const list = listOf(server);
    if (!list) continue;
    if (tool === undefined) for (const t of [...list].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) push(server, t);
    else {
      const t = list.find((x) => x.name === tool);
      if (t) push(server, t);
    }
  }
  return out;
}

/**
 * Entries that cannot be honoured: a tool its server does not list (known only while the server is
 * up), or a server the host does not run (added to the config by a reload: servers start with the daemon).
 */
export function missingEntries(agents: readonly AgentToolsDef[], servers: ReadonlySet<string>, listOf: (server: string) => readonly ListedTool[] | undefined): MissingToolEntry[] {
  const out: MissingToolEntry[] = [];
  agents.forEach((a, i) => {
    (a.tools ?? []).forEach((entry, k) => {
      const path = `agents[${i}].tools[${k}]`;
      const { server, tool } = splitEntry(entry);
      if (!servers.has(server)) {
        out.push({ path, agent: a.id, entry, message: `no MCP server "${server}" is running (servers added to tools: start after a restart)` });
        return;
      }
      const list = listOf(server);
      if (tool === undefined || !list || list.some((t) => t.name === tool)) return;
      const has = list.map((t) => t.name).sort();
      out.push({ path, agent: a.id, entry, message: `MCP server "${server}" has no tool "${tool}" (it has: ${has.length ? has.join(', ') : 'none'})` });
    });
  });
  return out;
}
