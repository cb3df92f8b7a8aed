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
 * Tokens are estimated, not counted: no single tokenizer fits every server (Claude, Llama, Qwen and
 * Mistral all split differently), and shipping several would cost more than it saves. The
 * estimate weighs each ASCII character 1 and every other code point 3 (CJK and emoji take about a
 * token per character) and divides by a units-per-token ratio that starts at a conservative 3
 * (English runs near 4.5) and is learned per model from the prompt token counts the provider
 * reports for the prompts we sent: it follows a lower observation at once and a higher one slowly,
 * and 10% is kept in hand. A margin of 5% of the window (at least 32 tokens) covers the chat
 * template's own tokens.
 *
 * Assembly order and what gives way (the prompt reads: stable system prefix, summary, recent
 * history, then the mailbox and the ask): the prefix and the ask are always sent; the summary is
 * shortened only if nothing else is left; the mailbox keeps its newest observations — at least
 * the newest one, cut if it alone is too long — and the older ones are folded into one digest line
 * ("14 earlier messages from Maya and Critic, not shown in full; they began: …"), built without a
 * model call; history turns that do not fit are left out oldest first (they stay in the session
 * and the log). The mailbox may use up to 60% of the room, or more when the history needs less.
 */
import { LlmError } from '../errors.js';
import { cleanDisplayName } from '../text/displayName.js';
import type { AgentDef, ChatTurn, TranscriptEntry, Usage } from '../types.js';
import { buildUserTurn, observationLine, summaryBlock, type Ask } from './prompt.js';

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
/** Tokens the chat template adds per message (role markers, separators), and per request. */
const PER_MESSAGE = 6;
const PER_REQUEST = 12;
/**
 * An overflow that the provider's figures do not explain (or that came without any) caps the
 * window at this share of what the refused request needed (prompt + reply): halving converges in
 * a few calls even from a 200k assumption, so a server that gives no figures costs one failed turn.
 */
const UNEXPLAINED_SHARE = 0.5;
/** Share of the room the mailbox may take when the history wants the rest. */
const MAILBOX_SHARE = 0.6;
/** Words of each message shown in a digest. */
const DIGEST_WORDS = 8;
/** Names listed in a digest before "and N others". */
const DIGEST_NAMES = 4;

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

/** Everything one turn's prompt is made of, before it is fitted. */
export interface PromptParts {
  system: string;
  summary: string | null;
  history: readonly ChatTurn[];
  observations: readonly TranscriptEntry[];
  /** Observations not even read (past the mailbox cap). */
  omitted: number;
  ask: Ask;
}

/** A prompt that fits, and what was left out to make it fit. */
export interface FittedPrompt {
  system: string;
  /** The summary block (heading + text), or null. */
  summary: string | null;
  /** History turns sent, then the user turn. */
  messages: ChatTurn[];
  /** The user turn as sent (what the session records). */
  userTurn: string;
  /** max_tokens for the reply. */
  maxTokens: number;
  /** Estimated prompt tokens. */
  estimatedTokens: number;
  /** The prompt budget it was fitted into. */
  budgetTokens: number;
  /** Observations shown in full (or cut), folded into the digest, and history turns left out. */
  shown: number;
  folded: number;
  droppedHistory: number;
  /** The newest observation had to be cut to fit. */
  cutObservation: boolean;
  /** When it was cut: the UTF-16 length of the start kept. */
  cutTo?: number | undefined;
  /** The size the digest line was built to (weight units), when there is one. */
  digestUnits?: number | undefined;
  /** UTF-8-free size measure of the prompt, for calibration: weight units sent. */
  units: number;
  messageCount: number;
}

/** Text that is ASCII only: its weight is its length (a native scan, far cheaper than the loop). */
const ASCII_ONLY = /^[\x00-\x7f]*$/;

/** Weight units of a text: ASCII 1, any other code point 3 (see the file comment). Linear. */
export function textUnits(s: string): number {
  if (ASCII_ONLY.test(s)) return s.length;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else {
      n += 3;
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
        const d = s.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) i++;
      }
    }
  }
  return n;
}

/** The longest start of `s` of at most `units` weight units, never splitting a surrogate pair. */
function cutUnits(s: string, units: number): string {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && s.charCodeAt(i + 1) >= 0xdc00 && s.charCodeAt(i + 1) <= 0xdfff;
    const w = c < 0x80 ? 1 : 3;
    if (n + w > units) return s.slice(0, i);
    n += w;
    if (pair) i++;
  }
  return s;
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
   * `units` we sent in `messageCount` messages. Usage of zero (a server that does not count) teaches nothing.
   */
  learn(model: string, sent: { units: number; messageCount: number }, usage: Usage): number | undefined {
    const prompt = usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
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

/**
 * Fit `parts` into `budget` tokens, counting with `count` (template overhead included per call)
 * and `ratio` units per token (to cut texts). Pure; see the file comment for what gives way.
 */
export function fitPrompt(parts: PromptParts, budget: number, maxTokens: number, count: (text: string) => number, ratio: number): FittedPrompt {
  const { ask } = parts;
  let summary = summaryBlock(parts.summary);
  // The user turn's frame: headings and the ask, with an empty mailbox.
  const frame = count(buildUserTurn([], ask)) + PER_REQUEST;
  // Counted once: the system prefix is the longest text of most prompts.
  const systemTokens = count(parts.system);
  const fixed = systemTokens + frame;
  let summaryTokens = summary ? count(summary) : 0;
  let room = budget - fixed - summaryTokens;
  if (room < 0 && summary) {
    // Only the summary can still give way: keep its start.
    const keep = Math.max(0, Math.floor((summaryTokens + room - PER_MESSAGE) * ratio));
    summary = keep > 40 ? `${cutUnits(summary, keep)}…` : null;
    summaryTokens = summary ? count(summary) : 0;
    room = budget - fixed - summaryTokens;
  }
  room = Math.max(0, room);

  const history = parts.history;
  const historyTokens = history.map((t) => count(t.content));
  const historyTotal = historyTokens.reduce((a, b) => a + b, 0);
  const obs = parts.observations;
  const lineTokens = obs.map((e) => Math.ceil(textUnits(observationLine(e)) / ratio) + 1);
  const mailboxCap = Math.max(Math.floor(room * MAILBOX_SHARE), room - historyTotal);

  // Newest observations first, while they fit; room is kept for the digest line if some are left.
  const digestRoom = obs.length > 1 || parts.omitted > 0 ? Math.min(120, Math.floor(room * 0.15)) : 0;
  const cap = mailboxCap - digestRoom;
  let used = 0;
  let first = obs.length;
  while (first > 0 && used + lineTokens[first - 1]! <= cap) {
    used += lineTokens[first - 1]!;
    first--;
  }
  let shownEntries = obs.slice(first);
  let cutObservation = false;
  let cutTo: number | undefined;
  if (shownEntries.length === 0 && obs.length > 0) {
    // Even the newest does not fit: it is the one that matters most, so it is cut, not left out.
    const newest = obs[obs.length - 1]!;
    const frameUnits = textUnits(observationLine({ ...newest, text: '' })) + 80;
    const allowed = Math.max(0, Math.floor(cap * ratio) - frameUnits);
    const kept = cutUnits(newest.text, allowed);
    const rest = newest.text.length - kept.length;
    shownEntries = [{ ...newest, text: `${kept}… [${rest} more characters not shown]` }];
    used = Math.ceil(textUnits(observationLine(shownEntries[0]!)) / ratio) + 1;
    first = obs.length - 1;
    cutObservation = true;
    cutTo = kept.length;
  }
  const foldedEntries = obs.slice(0, first);
  const folded = foldedEntries.length;
  const digestUnits = folded + parts.omitted > 0 ? Math.max(0, Math.floor(Math.max(digestRoom, 20) * ratio)) : undefined;
  const digest = digestUnits !== undefined ? digestLine(foldedEntries, parts.omitted, digestUnits) : null;
  const userTurn = buildUserTurn(shownEntries, ask, parts.omitted + folded, digest);
  const userTokens = count(userTurn) + PER_REQUEST;

  // History: newest turns that still fit after the mailbox, left out oldest first.
  let left = budget - systemTokens - summaryTokens - userTokens;
  let start = history.length;
  while (start > 0 && historyTokens[start - 1]! <= left) {
    left -= historyTokens[start - 1]!;
    start--;
  }
  // The history must start with a user turn (and alternate): leave out a leading assistant turn.
  while (start < history.length && history[start]!.role !== 'user') start++;
  const kept = history.slice(start);
  const messages: ChatTurn[] = [...kept, { role: 'user', content: userTurn }];
  const estimatedTokens = systemTokens + summaryTokens + historyTokens.slice(start).reduce((n, t) => n + t, 0) + userTokens;
  const units = textUnits(parts.system) + (summary ? textUnits(summary) : 0) + messages.reduce((n, m) => n + textUnits(m.content), 0);
  return {
    system: parts.system,
    summary,
    messages,
    userTurn,
    maxTokens,
    estimatedTokens,
    budgetTokens: budget,
    shown: shownEntries.length,
    folded,
    droppedHistory: start,
    cutObservation,
    ...(cutTo !== undefined ? { cutTo } : {}),
    ...(digestUnits !== undefined ? { digestUnits } : {}),
    units,
    messageCount: messages.length + (summary ? 2 : 1),
  };
}

/**
 * The line that stands for observations not shown in full: how many, from whom, and how each of
 * the newest began — as much as `units` allows, never less than the count.
 */
export function digestLine(entries: readonly TranscriptEntry[], omitted: number, units: number): string {
  const total = entries.length + omitted;
  const plural = total === 1 ? 'message' : 'messages';
  // Outside any <message> block: no angle brackets from what people wrote, so nothing can open one.
  const safe = (s: string) => s.replace(/[<>\uFF1C\uFF1E\uFE64\uFE65\u2039\u203A\u276E\u276F\u3008\u3009]/g, ' ');
  const nameOf = (e: TranscriptEntry) => (e.kind === 'system' ? 'Chorus' : safe(cleanDisplayName(e.authorName)) || 'someone');
  const names: string[] = [];
  for (const e of entries) {
    const n = nameOf(e);
    if (!names.includes(n)) names.push(n);
  }
  const who =
    names.length === 0
      ? ''
      : names.length <= DIGEST_NAMES
        ? ` from ${names.slice(0, -1).join(', ')}${names.length > 1 ? ' and ' : ''}${names.at(-1)}`
        : ` from ${names.slice(0, DIGEST_NAMES).join(', ')} and ${names.length - DIGEST_NAMES} others`;
  const bare = `(${total} earlier ${plural}${who} not shown in full)`;
  const plain = `(${total} earlier ${plural} not shown)`;
  // Nothing read to describe (all past the mailbox cap), or no room to: the count alone.
  if (entries.length === 0 || textUnits(bare) > units) return plain;
  // How the newest folded messages began, newest last, while they fit.
  const openings: string[] = [];
  let size = textUnits(bare) + 16;
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    // Only the start is read: a digest costs the same for a 30 KB reply as for a short one.
    const end = /[\uD800-\uDBFF]/.test(e.text.charAt(399)) ? 399 : 400;
    const words = e.text.slice(0, end).replace(/\s+/g, ' ').trim().split(' ');
    const start = safe(words.slice(0, DIGEST_WORDS).join(' '));
    const name = nameOf(e);
    const piece = `${name}: "${start}${words.length > DIGEST_WORDS ? '…' : ''}"`;
    if (size + textUnits(piece) + 3 > units) break;
    size += textUnits(piece) + 3;
    openings.unshift(piece);
  }
  if (openings.length === 0) return bare;
  const more = entries.length - openings.length;
  return `(${total} earlier ${plural}${who} not shown in full; ${more > 0 || omitted > 0 ? 'the newest of them began' : 'they began'}: ${openings.join(' · ')})`;
}
