/**
 * The `tools:` section: MCP servers by name, each reached one way — a program Chorus starts and
 * speaks to over stdio (`command`), or a Streamable HTTP endpoint (`url`). Both ways share one
 * mapping rather than a union so a mistake is reported on its key ("tools.orders.comand: unknown
 * key (did you mean "command"?)") instead of zod's "matches none of the options"; which keys go
 * with which way is checked in toolRules.ts.
 */
import { z } from 'zod';

/** Environment values may be written as YAML numbers or booleans (`PORT: 9000`); a child sees text. */
const envValue = z.union([z.string(), z.number(), z.boolean()]).transform(String);

export const toolServerSchema = z
  .object({
    /** stdio: the program to start (looked up on PATH, or relative to `cwd`). */
    command: z.string().trim().min(1).optional(),
    args: z.array(z.union([z.string(), z.number()]).transform(String)).optional(),
    /** Added to a small safe base (PATH, HOME, ...): the daemon's own secrets are not passed on. */
    env: z.record(z.string(), envValue).optional(),
    /** Where the program runs; relative to the config file's folder, which is also the default. */
    cwd: z.string().trim().min(1).optional(),
    /** Streamable HTTP: the endpoint, e.g. http://127.0.0.1:9000/mcp. */
    url: z.string().trim().url().optional(),
    headers: z.record(z.string(), envValue).optional(),
    /** When a person must approve a call: auto (only calls that change something), always, never. */
    confirm: z.enum(['auto', 'always', 'never']).default('auto'),
    /** Who may approve: chat admins (and web token holders), or anyone in the room. */
    approvers: z.enum(['admins', 'anyone']).default('admins'),
  })
  .strict();

/** MCP servers by name; nothing else lives in this map, so every key is a server. */
export const toolsSchema = z.record(z.string(), toolServerSchema).default({});

/** `agents[].tools` entries: a server (all its tools) or `server.tool` (tool names may hold dots). */
export const agentToolsSchema = z.array(z.string().trim().regex(/^[A-Za-z0-9_-]+(\.\S+)?$/, 'must be a server name from tools:, or server.tool')).optional();

/** Default of `limits.max_tool_result_bytes`: 64 KiB of a tool's answer reach the model. */
export const DEFAULT_MAX_TOOL_RESULT_BYTES = 64 * 1024;

export const maxToolResultBytesSchema = z.number().int().min(1024).max(16 * 1024 * 1024).default(DEFAULT_MAX_TOOL_RESULT_BYTES);

/** One configured MCP server, defaults filled in. */
export type ToolServerConfig = z.infer<typeof toolServerSchema>;
