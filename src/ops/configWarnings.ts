/**
 * What `chorus check` (and `chorus doctor`) can tell from the config alone that is valid but
 * probably not what was meant: model names the provider will refuse, and the context
 * window Chorus will assume for an OpenAI-compatible server.
 */
import type { ChorusConfig } from '../config/schema.js';
import { summaryModelOf } from '../config/schema.js';
import { DEFAULT_CONTEXT_TOKENS, knownContextTokens } from '../core/session/contextBudget.js';
import { info, warn, type Finding } from './findings.js';

/** Names of Anthropic's models (what an OpenAI-compatible server will not know). */
const ANTHROPIC_NAME = /^claude-/i;

export function configWarnings(config: ChorusConfig): Finding[] {
  const llm = config.llm;
  const out: Finding[] = [];
  const named: Array<[string, string]> = [[llm.model, 'llm.model']];
  if (llm.summary_model) named.push([llm.summary_model, 'llm.summary_model']);
  config.agents.forEach((a, i) => {
    if (a.model) named.push([a.model, `agents[${i}].model`]);
  });
  for (const [model, key] of named) {
    if (llm.provider === 'openai' && ANTHROPIC_NAME.test(model)) {
      out.push(
        warn(
          key,
          `"${model}" is an Anthropic model name, but llm.provider is openai: Ollama, llama.cpp and vLLM refuse names they do not serve`,
          key === 'llm.summary_model' ? 'remove llm.summary_model (each agent then summarises with its own model) or name a model the server serves' : `set ${key} to a model the server serves`,
        ),
      );
    } else if (llm.provider === 'anthropic' && !ANTHROPIC_NAME.test(model)) {
      out.push(warn(key, `"${model}" does not look like an Anthropic model name, but llm.provider is anthropic`, `use a claude-… model, or set llm.provider: openai for an OpenAI-compatible server`));
    }
  }
  if (llm.provider === 'openai') {
    const summary = summaryModelOf(llm);
    out.push(info('summaries', summary ? `written by ${summary}` : "each agent's own model writes its summaries (llm.summary_model unset)"));
    const unknown = [llm.model, ...config.agents.filter((a) => a.context_tokens == null).map((a) => a.model ?? llm.model)].filter((m) => knownContextTokens(m) === undefined);
    if (llm.context_tokens == null && unknown.length > 0) {
      out.push(
        info(
          'context window',
          `assumed ${DEFAULT_CONTEXT_TOKENS['openai']} tokens for ${[...new Set(unknown)].join(', ')} (the default of llama-server and Ollama); a smaller one is learned from the server's first "too long" answer`,
        ),
      );
    }
  }
  const windows = [llm.context_tokens, ...config.agents.map((a) => a.context_tokens)].filter((n): n is number => typeof n === 'number');
  const smallest = windows.length ? Math.min(...windows) : null;
  if (smallest !== null && llm.max_tokens > smallest / 2) {
    out.push(warn('llm.max_tokens', `${llm.max_tokens} is more than half of a ${smallest}-token context window: replies get at most ${Math.floor(smallest / 2)} tokens there`, `lower llm.max_tokens or raise context_tokens`));
  }
  return out;
}
