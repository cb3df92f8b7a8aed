/**
 * The checks `chorus init` makes of each answer before it writes anything: a Telegram token is
 * asked who it is (getMe: the bot's name and whether privacy mode lets it read a group), a model
 * server is asked which models it serves. Through the same clients the daemon uses (grammY, the
 * Anthropic and OpenAI SDKs), so a token that passes here is one the daemon can use.
 */
import Anthropic from '@anthropic-ai/sdk';
import { Api } from 'grammy';
import OpenAI from 'openai';
import { describeError } from '../channels/telegram/errors.js';

const TIMEOUT_MS = 15_000;

export type Checked<T> = { ok: true; value: T } | { ok: false; problem: string };

export interface BotIdentity {
  username: string;
  name: string;
  /** Privacy mode off: the bot reads every message of a group, not only those addressed to it. */
  readsAll: boolean;
}

export async function telegramBot(token: string, apiRoot: string): Promise<Checked<BotIdentity>> {
  if (!/^\d+:[\w-]+$/.test(token)) return { ok: false, problem: 'does not look like a bot token from @BotFather ("123456:ABC...")' };
  try {
    const me = await new Api(token, { apiRoot }).getMe(AbortSignal.timeout(TIMEOUT_MS) as Parameters<Api['getMe']>[0]);
    return { ok: true, value: { username: me.username, name: me.first_name, readsAll: me.can_read_all_group_messages } };
  } catch (err) {
    return { ok: false, problem: `Telegram refused it (${describeError(err, [token])})` };
  }
}

/** The models a server lists (Anthropic, or an OpenAI-compatible one: Ollama, llama.cpp, vLLM). */
export async function listModels(provider: 'anthropic' | 'openai', opts: { apiKey?: string | undefined; baseUrl?: string | undefined }): Promise<Checked<string[]>> {
  try {
    const ids: string[] = [];
    if (provider === 'anthropic') {
      const client = new Anthropic({ apiKey: opts.apiKey ?? '', ...(opts.baseUrl ? { baseURL: opts.baseUrl } : {}), maxRetries: 0, timeout: TIMEOUT_MS });
      for await (const m of client.models.list({ limit: 100 })) ids.push(m.id);
    } else {
      // A local server needs no key, but the SDK wants one: any text does.
      const client = new OpenAI({ apiKey: opts.apiKey || 'no-key', baseURL: opts.baseUrl ?? null, maxRetries: 0, timeout: TIMEOUT_MS });
      for await (const m of client.models.list()) ids.push(m.id);
    }
    return ids.length ? { ok: true, value: ids } : { ok: false, problem: 'the server lists no models' };
  } catch (err) {
    const status = (err as { status?: number }).status;
    const secrets = opts.apiKey ? [opts.apiKey] : [];
    const why = status === 401 || status === 403 ? 'the key was refused' : describeError(err, secrets);
    return { ok: false, problem: `${opts.baseUrl ?? provider} did not list its models (${why})` };
  }
}
