/**
 * Tool use in the fake Anthropic server: scripted tool calls and the API's checks of `tools`,
 * `tool_choice` and the `tool_use` / `tool_result` blocks of a conversation.
 *
 * A reply calls tools with `toolCalls` (see {@link FakeToolCall}; `callTool` in `./index.ts` builds one).
 * Streamed, each call is a block of its own after the text, the way the API sends it:
 *
 *   content_block_start {type: 'tool_use', id, name, input: {}} →
 *   content_block_delta {type: 'input_json_delta', partial_json: ''} →
 *   content_block_delta {type: 'input_json_delta', partial_json: <piece>} … → content_block_stop
 *
 * and `message_delta` says `stop_reason: 'tool_use'`. As JSON, each call is a `tool_use` content
 * block with its parsed `input`.
 */

/** One tool call of a scripted reply. */
export interface FakeToolCall {
  /** Default `toolu_fake_<request index>_<n>`. */
  id?: string;
  name: string;
  /** The arguments (default `{}`). */
  input?: Record<string, unknown>;
  /** Streams only: send this text as the arguments instead of `input`'s JSON (a model writing broken JSON). */
  rawJson?: string;
  /** How the arguments' JSON is cut into `input_json_delta` events (default: pieces of 7 characters). */
  jsonChunks?: string[];
}

/** The id a call gets when the script names none. */
export function toolCallId(call: FakeToolCall, requestIndex: number, n: number): string {
  return call.id ?? `toolu_fake_${requestIndex}_${n}`;
}

/** The arguments' JSON text as streamed (JSON answers always carry `input`, parsed, as the API's do). */
export function toolCallJson(call: FakeToolCall): string {
  return call.rawJson ?? call.jsonChunks?.join('') ?? JSON.stringify(call.input ?? {});
}

/** The `partial_json` pieces of one call: an empty one first (as the API sends), then the text. */
export function toolJsonPieces(call: FakeToolCall): string[] {
  if (call.jsonChunks) return ['', ...call.jsonChunks];
  const json = toolCallJson(call);
  const pieces = [''];
  for (let i = 0; i < json.length; i += 7) pieces.push(json.slice(i, i + 7));
  return pieces;
}

type Json = Record<string, unknown>;

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;
const CHOICES = ['auto', 'any', 'tool', 'none'];

/** The checks of `tools` and `tool_choice`; null when they pass. */
export function validateTools(body: Json): string | null {
  const tools = body['tools'];
  if (tools !== undefined) {
    if (!Array.isArray(tools)) return 'tools: Input should be a valid list';
    const names = new Set<string>();
    for (const [i, t] of (tools as Json[]).entries()) {
      const name = t['name'];
      if (typeof name !== 'string' || !TOOL_NAME.test(name)) return `tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`;
      if (names.has(name)) return 'tools: Tool names must be unique.';
      names.add(name);
      const schema = t['input_schema'] as Json | undefined;
      if (!schema || typeof schema !== 'object' || schema['type'] !== 'object') return `tools.${i}.custom.input_schema.type: Input should be 'object'`;
    }
  }
  const choice = body['tool_choice'] as Json | undefined;
  if (choice !== undefined) {
    if (!choice || typeof choice !== 'object' || !CHOICES.includes(String(choice['type']))) return `tool_choice: Input tag '${String(choice?.['type'])}' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'`;
    if (!Array.isArray(tools) || tools.length === 0) return 'tool_choice: tool_choice may only be specified while providing tools';
  }
  return null;
}

/**
 * The checks of tool blocks in `messages`: `tool_use` only from the assistant, with a unique id and
 * an object input, answered by a `tool_result` in the very next (user) message; a `tool_result`
 * only for a `tool_use` of the message just before it.
 */
export function validateToolBlocks(messages: Json[]): string | null {
  const blocksOf = (m: Json | undefined): Json[] => (Array.isArray(m?.['content']) ? (m!['content'] as Json[]) : []);
  const seen = new Set<string>();
  for (const [i, m] of messages.entries()) {
    const blocks = blocksOf(m);
    const uses = blocks.filter((b) => b['type'] === 'tool_use');
    const results = blocks.filter((b) => b['type'] === 'tool_result');
    if (uses.length && m['role'] !== 'assistant') return `messages.${i}: tool_use blocks can only be in assistant messages`;
    if (results.length && m['role'] !== 'user') return `messages.${i}: tool_result blocks can only be in user messages`;
    for (const u of uses) {
      const id = u['id'];
      if (typeof id !== 'string' || !id) return `messages.${i}: tool_use.id: Field required`;
      if (seen.has(id)) return `messages.${i}: \`tool_use\` ids must be unique`;
      seen.add(id);
      if (!u['input'] || typeof u['input'] !== 'object' || Array.isArray(u['input'])) return `messages.${i}: tool_use.input: Input should be a valid dictionary`;
    }
    if (uses.length) {
      const answered = new Set(blocksOf(messages[i + 1]).filter((b) => b['type'] === 'tool_result').map((b) => b['tool_use_id']));
      const missing = uses.map((u) => String(u['id'])).filter((id) => !answered.has(id));
      if (missing.length) {
        return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
      }
    }
    if (results.length) {
      const prev = messages[i - 1];
      const used = new Set(prev?.['role'] === 'assistant' ? blocksOf(prev).filter((b) => b['type'] === 'tool_use').map((b) => b['id']) : []);
      for (const [j, r] of blocks.entries()) {
        if (r['type'] !== 'tool_result' || used.has(r['tool_use_id'])) continue;
        return `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(r['tool_use_id'])}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
      }
    }
  }
  return null;
}
