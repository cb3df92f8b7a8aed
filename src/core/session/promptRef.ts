/**
 * "What did this agent see?": each turn's prompt is kept by reference (`PromptRef`, on the reply
 * or pass line written with the turn) and rebuilt from the log on request (groups/promptContext).
 *
 * Why a reference and not a copy: a prompt repeats the whole kept history every turn, so copies
 * would grow the log by the square of a conversation's length. Everything a prompt is made of is
 * already in the log — entries never change once written — except what the fit decided in memory
 * (how far the digest line and a cut observation went: they depend on a token ratio learned since
 * the start) and the running summary (rewritten in place). The reference holds exactly those.
 */
import { createHash, type Hash } from 'node:crypto';
import type { PromptRef, TranscriptEntry } from '../types.js';
import { BoundedMap } from '../lib/BoundedMap.js';
import type { FittedPrompt, PromptParts } from './fitPrompt.js';
import { digestLine } from './digestLine.js';
import { buildUserTurn, summaryBlock, type Ask } from './prompt.js';

/** Sessions whose summary carrier is remembered (one per group and agent in use). */
const CARRIERS_MAX = 4096;

/** First 16 hex digits of the SHA-256 of `text`: enough to tell two versions of a part apart. */
export function partHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/** The hash of a list of history messages as sent. */
export function historyHash(messages: ReadonlyArray<{ role: string; content: string }>): string {
  return partHash(JSON.stringify(messages.map((m) => [m.role, m.content])));
}

/**
 * The history hash of each session, kept running. A turn's history is the previous turn's with
 * the new messages after it (until a fold or a cut changes its start), so only those are hashed:
 * the same hash `historyHash` makes, at the cost of the new messages rather than the whole history.
 */
export class RunningHistoryHashes {
  private readonly kept = new BoundedMap<string, { items: Array<{ role: string; content: string }>; state: Hash }>(CARRIERS_MAX);

  of(key: string, messages: ReadonlyArray<{ role: string; content: string }>): string {
    let k = this.kept.get(key);
    if (!k || k.items.length > messages.length || k.items.some((m, i) => m.role !== messages[i]!.role || m.content !== messages[i]!.content)) {
      k = { items: [], state: createHash('sha256').update('[') };
      this.kept.set(key, k);
    }
    // JSON.stringify of the list is its items' JSON joined by commas, between brackets.
    for (let i = k.items.length; i < messages.length; i++) {
      const m = messages[i]!;
      k.state.update((i > 0 ? ',' : '') + JSON.stringify([m.role, m.content]));
      k.items.push({ role: m.role, content: m.content });
    }
    return k.state.copy().update(']').digest('hex').slice(0, 16);
  }
}

/**
 * Builds each turn's reference. Remembers, per session, which reply carries the text of the
 * summary version in use, so the text is written once per version (again after a restart, which
 * forgets: a second copy costs a little space and nothing in exactness).
 */
export class PromptRefs {
  private readonly carriers = new BoundedMap<string, { hash: string; seq: number }>(CARRIERS_MAX);
  private readonly histories = new RunningHistoryHashes();
  /** Each agent's system prompt changes rarely: its hash is made again only when it does. */
  private readonly systems = new BoundedMap<string, { text: string; hash: string }>(CARRIERS_MAX);

  /** The reference of a turn whose prompt `p` was fitted from `parts`. */
  make(groupId: string, agentId: string, model: string, window: number, parts: PromptParts, p: FittedPrompt, summary: string | null, opts: { carrySummary: boolean }): PromptRef {
    const obs = parts.observations;
    const shown = obs.slice(obs.length - p.shown).map((e) => e.seq);
    const folded = obs.slice(0, p.folded);
    return {
      v: 1,
      model,
      shown,
      ...(p.cutTo !== undefined ? { cutTo: p.cutTo } : {}),
      ...(folded.length > 0 ? { folded: { count: folded.length, from: folded[0]!.seq, to: folded.at(-1)!.seq } } : {}),
      ...(parts.omitted > 0 ? { omitted: parts.omitted } : {}),
      ...(p.digestUnits !== undefined ? { digestUnits: p.digestUnits } : {}),
      ask: parts.ask,
      history: p.messages.length - 1,
      ...(p.files.length > 0 ? { files: p.files } : {}),
      ...(summary?.trim() ? { summary: this.summaryRef(groupId, agentId, summary, p.summary, opts.carrySummary) } : {}),
      window: { contextTokens: window, budgetTokens: p.budgetTokens, estimatedTokens: p.estimatedTokens, maxTokens: p.maxTokens },
      hashes: { system: this.systemHash(groupId, agentId, p.system), history: this.histories.of(`${groupId}\n${agentId}`, p.messages.slice(0, -1)), user: partHash(p.userTurn) },
    };
  }

  private systemHash(groupId: string, agentId: string, text: string): string {
    const key = `${groupId}\n${agentId}`;
    const known = this.systems.get(key);
    if (known?.text === text) return known.hash;
    const hash = partHash(text);
    this.systems.set(key, { text, hash });
    return hash;
  }

  /** The reply that carried its summary's text was recorded as entry `seq`. */
  recorded(groupId: string, agentId: string, ref: PromptRef | undefined, seq: number): void {
    if (ref?.summary?.text !== undefined) this.carriers.set(`${groupId}\n${agentId}`, { hash: ref.summary.hash, seq });
  }

  private summaryRef(groupId: string, agentId: string, summary: string, sent: string | null, carry: boolean): NonNullable<PromptRef['summary']> {
    const hash = partHash(summary);
    const block = summaryBlock(summary);
    // The fit keeps the summary's start and marks the cut with "…"; or leaves it out (0).
    const cutTo = sent === block ? undefined : sent === null ? 0 : sent.length - 1;
    const known = this.carriers.get(`${groupId}\n${agentId}`);
    const where = known?.hash === hash ? { at: known.seq } : carry ? { text: summary } : {};
    return { hash, ...where, ...(cutTo !== undefined ? { cutTo } : {}) };
  }
}

/** The summary block as sent, from the summary's text and the reference's cut. */
export function sentSummary(text: string, cutTo: number | undefined): string | null {
  const block = summaryBlock(text);
  if (block === null || cutTo === 0) return null;
  return cutTo === undefined ? block : `${block.slice(0, cutTo)}…`;
}

/** An observation as shown: the newest one cut to `cutTo` says how much was left out. */
export function shownText(e: TranscriptEntry, cutTo: number | undefined): TranscriptEntry {
  if (cutTo === undefined) return e;
  return { ...e, text: `${e.text.slice(0, cutTo)}… [${e.text.length - cutTo} more characters not shown]` };
}

/** The user turn of a reference, rebuilt from its observations as read from the log. */
export function rebuildUserTurn(ref: PromptRef, shown: readonly TranscriptEntry[], folded: readonly TranscriptEntry[]): { userTurn: string; digest: string | null } {
  const omitted = ref.omitted ?? 0;
  const digest = ref.digestUnits !== undefined ? digestLine(folded, omitted, ref.digestUnits) : null;
  const full = shown.map((e, i) => (i === shown.length - 1 ? shownText(e, ref.cutTo) : e));
  return { userTurn: buildUserTurn(full, ref.ask as Ask, omitted + folded.length, digest), digest };
}
