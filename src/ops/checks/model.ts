/**
 * Doctor checks of the model endpoint: every model the config can ask for gets one tiny call
 * through the same provider the daemon uses (key, base URL, model name and SDK all exercised),
 * and its price is looked up in the table the cost metrics use.
 */
import type { ChorusConfig } from '../../config/schema.js';
import { replyTimeoutSeconds, summaryModelOf } from '../../config/schema.js';
import { LlmError } from '../../core/errors.js';
import { silentLogger } from '../../core/silentLogger.js';
import { createProvider } from '../../llm/createProvider.js';
import { resolvePrice } from '../../llm/pricing.js';
import { fail, ok, warn, type Finding } from '../findings.js';

/** A doctor call waits at most this long (the config's timeout when shorter). */
const CALL_TIMEOUT_S = 30;

/** Every model the config can ask for, with the keys that name it. */
function modelsInUse(config: ChorusConfig): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const add = (model: string, where: string) => out.set(model, [...(out.get(model) ?? []), where]);
  add(config.llm.model, 'llm.model');
  const summary = summaryModelOf(config.llm);
  if (summary) add(summary, config.llm.summary_model ? 'llm.summary_model' : 'llm.summary_model (default)');
  config.agents.forEach((a, i) => {
    if (a.model) add(a.model, `agents[${i}].model (${a.id})`);
  });
  return out;
}

export async function checkModels(config: ChorusConfig, scriptedReason: string | null): Promise<Finding[]> {
  const llm = config.llm;
  if (scriptedReason) {
    const fix = llm.provider === 'scripted' ? 'set llm.provider to anthropic or openai to use a real model' : 'set ANTHROPIC_API_KEY (or llm.api_key) to a key from console.anthropic.com';
    return [warn('llm', `the scripted provider would answer (${scriptedReason}): agents give canned demo replies`, fix)];
  }
  const provider = createProvider({ ...llm, max_retries: 0, timeout_seconds: undefined, reply_timeout_seconds: Math.min(replyTimeoutSeconds(llm), CALL_TIMEOUT_S) }, silentLogger);
  const where = llm.base_url ?? (llm.provider === 'anthropic' ? 'api.anthropic.com' : 'api.openai.com');
  const keyName = llm.provider === 'anthropic' ? 'ANTHROPIC_API_KEY (or llm.api_key)' : 'llm.api_key';
  const models = modelsInUse(config);
  const results = await Promise.all(
    [...models].map(async ([model, used]): Promise<Finding[]> => {
      const subject = `model ${model}`;
      const usedBy = used.join(', ');
      const started = performance.now();
      try {
        await provider.complete({
          purpose: 'turn',
          model,
          system: 'You are a health check. Answer with the single word OK.',
          messages: [{ role: 'user', content: 'Say OK.' }],
          maxTokens: 16,
          signal: AbortSignal.timeout(Math.min(replyTimeoutSeconds(llm), CALL_TIMEOUT_S) * 1000 + 1000),
        });
      } catch (err) {
        return [failure(err, subject, usedBy, where, keyName)];
      }
      const ms = Math.round(performance.now() - started);
      const out: Finding[] = [ok(subject, `${llm.provider} at ${where} answered in ${ms} ms (used by ${usedBy})`)];
      const price = resolvePrice(model, llm.prices);
      if (price) out.push(ok(`${subject} price`, `$${price.input} input / $${price.output} output per million tokens (row "${price.key}")`));
      else {
        out.push(
          warn(
            `${subject} price`,
            'no price known: /group usage and the page show "price unknown" for it, and chorus_llm_cost_usd_total leaves it out',
            `add llm.prices."${model}": { input: <USD per million input tokens>, output: <USD per million output tokens> } (0 for a free local model)`,
          ),
        );
      }
      return out;
    }),
  );
  return results.flat();
}

function failure(err: unknown, subject: string, usedBy: string, where: string, keyName: string): Finding {
  const code = err instanceof LlmError ? err.code : 'error';
  const message = brief(err instanceof Error ? err.message : String(err));
  switch (code) {
    case 'auth':
      return fail(subject, `the API key was refused by ${where} (${message})`, `set ${keyName} to a valid key`);
    case 'network':
      return fail(subject, `cannot connect to ${where} (${message})`, 'check llm.base_url and that the server is running and reachable');
    case 'timeout':
      return fail(subject, `no answer from ${where} in time`, 'check that the endpoint is up; a slow local model may need a larger group_defaults.agent_reply_timeout_seconds (time to its first token)');
    case 'model_not_found':
      return fail(subject, `${where} does not serve this model (${message})`, `set ${usedBy} to a model the endpoint serves`);
    case 'rate_limited':
    case 'overloaded':
      return warn(subject, `${where} is busy right now (${code}); key and model were accepted`, 'nothing to change if it passes later; otherwise check your rate limits');
    default:
      if (/\b404\b|not[_ ]found|does not exist|unknown model|model_not_found/i.test(message)) {
        return fail(subject, `${where} does not serve this model (${message})`, `set ${usedBy} to a model the endpoint serves`);
      }
      return fail(subject, `the test call failed: ${message}`, `check ${usedBy} and the llm section`);
  }
}

/** "Anthropic: 404 {"type":"error","error":{"message":"model: x"}}" → "404: model: x". */
function brief(message: string): string {
  const m = /(\d{3}) (\{.*\})\s*$/s.exec(message);
  if (!m) return message;
  try {
    const body = JSON.parse(m[2]!) as { message?: unknown; error?: { message?: unknown } };
    const inner = body.error?.message ?? body.message;
    return typeof inner === 'string' ? `${m[1]}: ${inner}` : message;
  } catch {
    return message;
  }
}
