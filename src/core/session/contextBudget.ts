/**
 * The context budget of one model call: every prompt Chorus sends fits the model's
 * context window, with room left for the reply.
 *
 * The window: `agents[].context_tokens`, else `llm.context_tokens`, else a known figure for the
 * model (Claude models: 200k), else the provider's default (4096 for OpenAI-compatible servers:
 * the default context of llama.cpp's `llama-server` and of Ollama, the servers people run on small
 * machines; a bigger server only loses room it could have used, a smaller one is learned from its
 * first "too long" answer). A window the provider reported in a "too long" answer wins over all.
 *
 * Tokens are estimated, not counted (tokenEstimate.ts: a text's weight in units). The units are
 * divided by a units-per-token ratio that starts at a conservative 3 (English runs near 4.5) and is
 * learned per model from the prompt token counts the provider reports for the prompts we sent: it
 * follows a lower observation at once and a higher one slowly, and 10% is kept in hand. A margin
 * of 5% of the window (at least 32 tokens) covers the chat template's own tokens.
 *
 * How a prompt is fitted into the room this leaves, and what gives way, is in fitPrompt.ts.
 */
import { LlmError } from '../errors.js';
import type { AgentDef, Usage } from '../types.js';
import { fitPrompt, type FittedPrompt, type PromptParts } from './fitPrompt.js';
import { PER_MESSAGE, PER_REQUEST, textUnits } from './tokenEstimate.js';

// `fit` takes and returns these: its callers get them where they get the budget.
export type { FittedPrompt, PromptParts } from './fitPrompt.js';

/** The provider answered that the prompt does not fit the model's context window. */
export class ContextTooLongError extends LlmError {
  constructor(
    message: string,
    /** The window the provider reported (`n_ctx`, "… > M maximum"), if it did. */
    readonly limit?: number | undefined,
    /** The prompt tokens the provider counted, if it said. */
    readonly promptTokens?: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, 'context_too_long', false, options);
  }
}

/** Window of a provider's models when neither the config nor the model table knows better. */
export const DEFAULT_CONTEXT_TOKENS: Readonly<Record<string, number>> = { anthropic: 200_000, openai: 4096, scripted: 200_000 };

/**
 * The window when a router is built without a provider default (tests, embedders): large, so
 * nothing is left out that would have been shown before the budget existed. The app always
 * passes `DEFAULT_CONTEXT_TOKENS[llm.provider]`.
 */
const UNSPECIFIED_WINDOW = 200_000;

/** Context windows of model families whose figure is published (first match wins). */
const KNOWN_WINDOWS: ReadonlyArray<[RegExp, number]> = [
  // docs.anthropic.com, "Models overview": every current Claude model has a 200k window
  // (1M for some Sonnet models only with a beta header Chorus does not send).
  [/^claude-/, 200_000],
];

/** The published window of `model`, if Chorus knows it. */
export function knownContextTokens(model: string): number | undefined {
  for (const [re, n] of KNOWN_WINDOWS) if (re.test(model)) return n;
  return undefined;
}

/** Texts whose weight is remembered (about 40 history turns per agent and group in use). */
const UNIT_CACHE_MAX = 8192;
/** Units per token before any usage was seen: conservative (see the file comment). */
const START_RATIO = 3;
/** Kept in hand on a learned ratio. */
const RATIO_MARGIN = 0.9;
/** Share of a new, higher observation taken in (a lower one is taken at once). */
const RATIO_RISE = 0.3;
/**
 * An overflow that the provider's figures do not explain (or that came without any) caps the
 * window at this share of what the refused request needed (prompt + reply): halving converges in
 * a few calls even from a 200k assumption, so a server that gives no figures costs one failed turn.
 */
const UNEXPLAINED_SHARE = 0.5;

/** What Chorus has learned about one model. */
interface ModelState {
  /** Learned units per token (margin not applied); undefined until a usage was seen. */
  ratio: number | undefined;
  /** A window the provider reported, or one inferred from a refused prompt. */
  limit: number | undefined;
}

/** Where the router's settings for windows come from. */
export interface BudgetSettings {
  /** `llm.context_tokens`; null or undefined: the model table, then the provider default. */
  contextTokens?: number | null | undefined;
  /** The provider's default window (`DEFAULT_CONTEXT_TOKENS[provider]`, set by the composition root). */
  defaultContextTokens?: number | undefined;
}

/**
 * Windows, calibration and fitting for every model the router calls. One per router; what it
 * learns lives in memory (a restart learns again from the first call's usage).
 */
export class ContextBudgets {
  private readonly models = new Map<string, ModelState>();

  constructor(private readonly settings: BudgetSettings = {}) {}

  private state(model: string): ModelState {
    let s = this.models.get(model);
    if (!s) this.models.set(model, (s = { ratio: undefined, limit: undefined }));
    return s;
  }

  /** The window assumed for `model` as used by `agent`. */
  window(model: string, agent?: Pick<AgentDef, 'contextTokens'> | undefined): number {
    const s = this.state(model);
    const configured = agent?.contextTokens ?? this.settings.contextTokens ?? knownContextTokens(model) ?? this.settings.defaultContextTokens ?? UNSPECIFIED_WINDOW;
    return Math.max(64, s.limit !== undefined ? Math.min(configured, s.limit) : configured);
  }

  /** Units per token in use for `model` (learned with margin, or the conservative start). */
  ratio(model: string): number {
    const r = this.state(model).ratio;
    return r === undefined ? START_RATIO : Math.min(6, Math.max(1, r * RATIO_MARGIN));
  }

  /**
   * Weight units of texts seen lately. History turns are the same string objects turn after turn
   * (V8 keeps a string's hash once computed), so a fit re-reads only the new texts: without this,
   * every turn re-scanned the whole kept history (10% of a throughput profile).
   */
  private readonly unitCache = new Map<string, number>();

  private units(text: string): number {
    if (text.length < 64) return textUnits(text);
    let n = this.unitCache.get(text);
    if (n === undefined) {
      if (this.unitCache.size >= UNIT_CACHE_MAX) this.unitCache.clear();
      this.unitCache.set(text, (n = textUnits(text)));
    }
    return n;
  }

  /** Estimated tokens of one message's text (template overhead included). */
  tokens(model: string, text: string): number {
    return Math.ceil(this.units(text) / this.ratio(model)) + PER_MESSAGE;
  }

  /**
   * Room for the prompt and for the reply: the reply keeps `maxTokens` unless that is more than
   * half the window (then half: a reply that cannot fit would fail or be cut anyway).
   */
  room(model: string, agent: Pick<AgentDef, 'contextTokens'> | undefined, maxTokens: number): { promptTokens: number; replyTokens: number; window: number } {
    const window = this.window(model, agent);
    const replyTokens = Math.max(16, Math.min(maxTokens, Math.floor(window / 2)));
    const margin = Math.max(32, Math.ceil(window * 0.05));
    return { promptTokens: Math.max(0, window - replyTokens - margin), replyTokens, window };
  }

  /**
   * Learn from a call that went through: the provider counted `usage` prompt tokens for the
   * `units` we sent in `messageCount` messages, and files estimated at `fileTokens` (not text:
   * taken off first). Usage of zero (a server that does not count) teaches nothing.
   */
  learn(model: string, sent: { units: number; messageCount: number; fileTokens?: number | undefined }, usage: Usage): number | undefined {
    const prompt = usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens - (sent.fileTokens ?? 0);
    const overhead = sent.messageCount * PER_MESSAGE + PER_REQUEST;
    if (prompt <= overhead || sent.units <= 0) return undefined;
    const observed = sent.units / (prompt - overhead);
    if (!Number.isFinite(observed) || observed <= 0) return undefined;
    const s = this.state(model);
    s.ratio = s.ratio === undefined || observed < s.ratio ? observed : s.ratio + (observed - s.ratio) * RATIO_RISE;
    return observed;
  }

  /**
   * Learn from a "too long" answer to the prompt `sent`: the window the provider reported (if any)
   * and the ratio its token count implies (if it gave one). When that teaches nothing — no figures,
   * or figures that would fit the same prompt again — the window is capped at half of what the
   * refused request needed, so the next fit is smaller whatever the provider said. Kept for the
   * model: later turns fit too.
   */
  overflow(model: string, agent: Pick<AgentDef, 'contextTokens'> | undefined, err: { limit?: number | undefined; promptTokens?: number | undefined }, sent: { units: number; messageCount: number; estimatedTokens: number; maxTokens: number }): void {
    const s = this.state(model);
    const before = this.room(model, agent, sent.maxTokens).promptTokens;
    if (err.limit !== undefined && err.limit > 0) s.limit = Math.min(s.limit ?? Infinity, err.limit);
    if (err.promptTokens !== undefined && err.promptTokens > 0) {
      this.learn(model, sent, { inputTokens: err.promptTokens, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 });
    }
    const after = this.room(model, agent, sent.maxTokens).promptTokens;
    // Explained: the room shrank, or the provider's count of the failed prompt is over the new room
    // (so the recalibrated estimate makes the next prompt smaller). Otherwise assume less.
    const explained = after < before || (err.promptTokens !== undefined && err.promptTokens > after);
    if (!explained) s.limit = Math.max(64, Math.min(s.limit ?? Infinity, Math.floor((sent.estimatedTokens + sent.maxTokens) * UNEXPLAINED_SHARE)));
  }

  /** Fit one turn's prompt into the budget of `model` for `agent`. */
  fit(model: string, agent: Pick<AgentDef, 'contextTokens'> | undefined, maxTokens: number, parts: PromptParts): FittedPrompt {
    const room = this.room(model, agent, maxTokens);
    return fitPrompt(parts, room.promptTokens, room.replyTokens, (t) => this.tokens(model, t), this.ratio(model));
  }
}
