/**
 * What a failed model call means, for people: the short reason an addressed turn's
 * notice shows in the chat ("⚠ Analyst could not reply (model not found)"), and the hint the log
 * line gives the operator ("check the model name and llm.base_url"). One table, keyed by the
 * `LlmError` codes the providers classify SDK errors into (src/llm/errors.ts), so the chat, the
 * round log and the provider's first-failure report always say the same thing.
 */
import { LlmError } from '../errors.js';
import type { ToolCall } from '../toolTypes.js';

export interface FailureText {
  /** A few words for the chat notice. */
  reason: string;
  /** What to check, for the log; null when there is nothing to change. */
  hint: string | null;
}

const TABLE: Record<string, FailureText> = {
  context_too_long: {
    reason: "the conversation did not fit the model's context window",
    hint: "lower group history_turns or set llm.context_tokens / agents[].context_tokens to the server's real context",
  },
  model_not_found: { reason: 'model not found', hint: 'check the model name and llm.base_url' },
  not_found: { reason: 'endpoint not found', hint: 'check llm.base_url (OpenAI-compatible servers usually end in /v1)' },
  auth: { reason: 'API key rejected', hint: 'check the API key (llm.api_key, or ANTHROPIC_API_KEY)' },
  rate_limited: { reason: 'rate limited', hint: 'the provider is limiting requests: lower llm.max_concurrency or raise the account limit' },
  overloaded: { reason: 'model overloaded', hint: 'the provider is overloaded; it usually passes (retries: llm.max_retries)' },
  timeout: {
    reason: 'timeout',
    hint:
      'the model did not start within the group\'s agent_reply_timeout_seconds (voluntary_timeout_seconds for voluntary turns), ' +
      'went silent longer than llm.idle_timeout_seconds, or ran past llm.reply_timeout_seconds; the message says which. ' +
      'A slow local model may need a larger one',
  },
  server: { reason: 'server error', hint: 'the model server answered with an error; see its own log' },
  network: { reason: 'network error', hint: 'is llm.base_url reachable?' },
  bad_request: { reason: 'request refused', hint: 'the server refused the request as invalid; the message says why' },
  empty: { reason: 'empty answer', hint: 'the model returned no text; a thinking model may have spent all of llm.max_tokens thinking' },
  unknown_tool: {
    reason: 'it called a tool it cannot use',
    hint:
      'the model answered only with a tool call nothing can run: no tools were offered this turn (an MCP server that is ' +
      'down offers none of its tools until it is back; see /readyz) or it had to answer in text (max_tool_steps)',
  },
  aborted: { reason: 'stopped', hint: null },
};

const UNKNOWN: FailureText = { reason: 'error', hint: null };

/** Reason and hint for an `LlmError` code (any other code: "error", no hint). */
export function describeFailure(code: string): FailureText {
  return TABLE[code] ?? UNKNOWN;
}

/** Just the operator's hint, for log lines. */
export function failureHint(code: string): string | null {
  return describeFailure(code).hint;
}

/**
 * An addressed turn whose answer is only tool calls the turn cannot run — the request offered no
 * tools, or told the model to answer in text — has nothing to post: a failure, so the person who
 * asked gets a notice instead of a silent pass.
 */
export function unrunnableCalls(calls: readonly ToolCall[]): LlmError {
  const names = [...new Set(calls.map((c) => c.name))].join(', ');
  const said = `the model answered only with a call to ${names}, a tool it could not use this turn`;
  return new LlmError(said, 'unknown_tool', false);
}
