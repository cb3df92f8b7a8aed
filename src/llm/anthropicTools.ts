/**
 * Tools in the Messages API: the `tools` and `tool_choice` parameters, and a turn's earlier
 * model ↔ tool round trips rendered as the API expects them back.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { LlmError } from '../core/errors.js';
import type { LlmRequest } from '../core/ports.js';
import type { ToolStep } from '../core/toolTypes.js';
import { nonEmpty } from './common.js';

/**
 * `tools` and `tool_choice`, or nothing when the request has no tools. The tools carry no
 * breakpoint of their own: they come first in the cached prefix (tools → system → messages), so
 * the breakpoint on the system prompt caches them with it, and a change of tools is a change of
 * that prefix. `none` keeps the tools in the request (the prefix, and so the cache, stays the same)
 * while the model must answer in text.
 */
export function anthropicToolParams(req: LlmRequest): Pick<Anthropic.MessageCreateParamsNonStreaming, 'tools' | 'tool_choice'> {
  if (!req.tools?.length) return {};
  return {
    tools: req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema as Anthropic.Tool.InputSchema })),
    tool_choice: req.toolChoice === 'none' ? { type: 'none' } : { type: 'auto' },
  };
}

/**
 * Each step as two messages: the assistant's (its text, when it said something, then one
 * `tool_use` block per call) and the user's answer (one `tool_result` per call, in order). The API
 * refuses a `tool_result` whose id is not a `tool_use` of the message just before it, and a
 * `tool_use` left without its result.
 */
export function anthropicStepMessages(steps: readonly ToolStep[] | undefined): Anthropic.MessageParam[] {
  const out: Anthropic.MessageParam[] = [];
  for (const step of steps ?? []) {
    if (step.calls.length === 0) throw new LlmError('Anthropic: a tool step needs at least one call', 'bad_request', false);
    const said: Anthropic.ContentBlockParam[] = step.text.trim() ? [{ type: 'text', text: step.text }] : [];
    const calls: Anthropic.ToolUseBlockParam[] = step.calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.input }));
    out.push({ role: 'assistant', content: [...said, ...calls] });
    const results: Anthropic.ToolResultBlockParam[] = step.results.map((r) => ({
      type: 'tool_result',
      tool_use_id: r.callId,
      content: nonEmpty(r.content),
      is_error: r.isError,
    }));
    out.push({ role: 'user', content: results });
  }
  return out;
}
