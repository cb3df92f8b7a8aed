/** Shared helpers for the provider tests. */
import type { ChorusConfig } from '../../src/config/schema.js';
import type { LlmRequest } from '../../src/core/ports.js';
import type { ChatTurn } from '../../src/core/types.js';
import type { ToolSpec } from '../../src/core/toolTypes.js';

/**
 * The model the tests ask for. Not `claude-sonnet-4-5` (the old default): SDK 1.12 lists that one
 * as deprecated and console.warns on every call. Priced at $5 / $25 per million in DEFAULT_PRICES.
 */
export const TEST_MODEL = 'claude-opus-4-5';

export const TEST_KEY = 'sk-ant-test-0123456789abcdefSECRET';

export function llmConfig(over: Partial<ChorusConfig['llm']> = {}): ChorusConfig['llm'] {
  return {
    provider: 'anthropic',
    api_key: TEST_KEY,
    base_url: null,
    model: TEST_MODEL,
    summary_model: 'claude-haiku-4-5',
    max_concurrency: 4,
    reply_timeout_seconds: 10,
    max_retries: 2,
    max_tokens: 512,
    prices: {},
    ...over,
  };
}

/** A stable prefix of roughly `tokens` estimated tokens (4 chars each). */
export function longPrefix(tokens: number, seed = 'analyst'): string {
  const head = `You are ${seed}, a member of the group "Market team". Participants: @analyst, @writer, @critic. `;
  const fill = 'Stay precise and keep to the facts of the discussion. ';
  let s = head;
  while (s.length < tokens * 4) s += fill;
  return s.slice(0, tokens * 4);
}

export function request(over: Partial<LlmRequest> & { messages: ChatTurn[] }): LlmRequest {
  return { purpose: 'turn', model: TEST_MODEL, system: longPrefix(1500), ...over };
}

/** A session's history after `n` exchanges plus the next user turn. */
export function conversation(n: number, tag = 'q'): ChatTurn[] {
  const out: ChatTurn[] = [];
  for (let i = 0; i < n; i++) {
    out.push({ role: 'user', content: `## Group conversation since your last turn\n[Maya (human)] ${tag} ${i}\n\n## Your turn\nYou were addressed directly: reply.` });
    out.push({ role: 'assistant', content: `answer ${i}` });
  }
  out.push({ role: 'user', content: `## Group conversation since your last turn\n[Maya (human)] ${tag} ${n}\n\n## Your turn\nYou were addressed directly: reply.` });
  return out;
}

/** Two tools, in the order the tool host would list them. */
export const TOOLS: ToolSpec[] = [
  {
    name: 'quotes_lookup',
    description: 'The latest quote of a stock symbol.',
    inputSchema: { type: 'object', properties: { symbol: { type: 'string' } }, required: ['symbol'] },
  },
  {
    name: 'news_search',
    description: 'Search recent news articles.',
    inputSchema: { type: 'object', properties: { q: { type: 'string' }, days: { type: 'integer' } }, required: ['q'] },
  },
];
