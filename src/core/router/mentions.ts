/**
 * Who a text addresses: `@handles` in order of first appearance, alias handles
 * expanded in participant order, never inside code spans, code blocks or e-mail addresses.
 * Text and handles are folded the same way before matching (core/text/normalize: NFKC, invisible
 * characters dropped, `＠` → `@`), so `@ana\u200blyst` and `＠analyst` address Analyst while a
 * Cyrillic look-alike does not. Every step is linear in the text.
 */
import type { AgentDef } from '../types.js';
import { blankCode } from '../text/markdownScan.js';
import { foldForMatching, handleKey } from '../text/normalize.js';

/** Resolves handles (lower-case, no `@`) to agent ids. */
export class HandleIndex {
  private readonly agentHandles = new Map<string, string>();
  private readonly groupHandles = new Map<string, string[]>();
  /** Handles learned at run time, kept across a config reload. */
  private readonly learned = new Map<string, string>();

  constructor(agents: readonly AgentDef[], aliases: Record<string, string[]>) {
    this.reset(agents, aliases);
  }

  /** Rebuild from (reloaded) agents and aliases; learned handles of agents still present stay. */
  reset(agents: readonly AgentDef[], aliases: Record<string, string[]>): void {
    this.agentHandles.clear();
    this.groupHandles.clear();
    for (const a of agents) {
      for (const h of [a.id, a.name.replace(/\s+/g, ''), ...a.aliases]) this.agentHandles.set(handleKey(h), a.id);
    }
    for (const [alias, members] of Object.entries(aliases)) this.groupHandles.set(handleKey(alias), members);
    for (const [h, id] of this.learned) {
      if (agents.some((a) => a.id === id) && !this.groupHandles.has(h)) this.agentHandles.set(h, id);
    }
  }

  /** Extra handles learned at run time (e.g. a Telegram bot's username). */
  addHandle(handle: string, agentId: string): void {
    const h = handleKey(handle);
    this.learned.set(h, agentId);
    if (!this.groupHandles.has(h)) this.agentHandles.set(h, agentId);
  }

  /** Agent ids a handle stands for within `participants` (alias handles in participant order). */
  resolve(handle: string, participants: readonly string[]): string[] {
    const h = handleKey(handle);
    if (h === 'all' || h === 'everyone') return [...participants];
    const members = this.groupHandles.get(h);
    if (members) return participants.filter((p) => members.includes(p));
    const id = this.agentHandles.get(h);
    return id && participants.includes(id) ? [id] : [];
  }

  /** Every handle an agent answers to, `@`-prefixed, for help texts and autocomplete. */
  handlesOf(agentId: string): string[] {
    return [...this.agentHandles.entries()].filter(([, id]) => id === agentId).map(([h]) => '@' + h);
  }
}

/** Blank out fenced blocks and inline code spans so `@x` inside them is not a mention. */
function stripCode(text: string): string {
  return blankCode(text);
}

// `@` must not follow a character that would make it part of a word, e-mail or URL; the handle
// must not continue into a domain (`@analyst.com`). Linear: the lookarounds look at one
// character, and the bounded handle only backtracks at an `@`.
const MENTION = /(?<![\p{L}\p{N}_.+\-/@])@([\p{L}\p{N}_-]{1,64})(?![\p{L}\p{N}_-]|\.[\p{L}\p{N}])/gu;

/** Handles mentioned in `text` (folded, as typed otherwise), in order, code and e-mail excluded. */
export function findHandles(text: string): string[] {
  const out: string[] = [];
  for (const m of stripCode(foldForMatching(text)).matchAll(MENTION)) out.push(m[1]!);
  return out;
}

/** Agents addressed by `text` within `participants`, in order of first appearance, no repeats. */
export function findMentions(text: string, index: HandleIndex, participants: readonly string[]): string[] {
  const out: string[] = [];
  for (const h of findHandles(text)) {
    for (const id of index.resolve(h, participants)) if (!out.includes(id)) out.push(id);
  }
  return out;
}
