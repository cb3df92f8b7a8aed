/**
 * Who a text addresses (SPEC §4 step 3): `@handles` in order of first appearance, alias handles
 * expanded in participant order, never inside code spans, code blocks or e-mail addresses.
 */
import type { AgentDef } from '../types.js';

/** Resolves handles (lower-case, no `@`) to agent ids. */
export class HandleIndex {
  private readonly agentHandles = new Map<string, string>();
  private readonly groupHandles = new Map<string, string[]>();

  constructor(agents: readonly AgentDef[], aliases: Record<string, string[]>) {
    for (const a of agents) {
      for (const h of [a.id, a.name.replace(/\s+/g, ''), ...a.aliases]) this.agentHandles.set(normalize(h), a.id);
    }
    for (const [alias, members] of Object.entries(aliases)) this.groupHandles.set(normalize(alias), members);
  }

  /** Extra handles learned at run time (e.g. a Telegram bot's username). */
  addHandle(handle: string, agentId: string): void {
    const h = normalize(handle);
    if (!this.groupHandles.has(h)) this.agentHandles.set(h, agentId);
  }

  /** Agent ids a handle stands for within `participants` (alias handles in participant order). */
  resolve(handle: string, participants: readonly string[]): string[] {
    const h = normalize(handle);
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

  /** Group handles (config aliases plus the built-ins). */
  groupAliases(): Record<string, string[]> {
    return Object.fromEntries(this.groupHandles);
  }
}

function normalize(handle: string): string {
  return handle.replace(/^@/, '').toLowerCase();
}

/** Blank out fenced blocks and inline code spans so `@x` inside them is not a mention. */
export function stripCode(text: string): string {
  const blank = (m: string) => m.replace(/[^\n]/g, ' ');
  return text.replace(/(^|\n)(`{3,}|~{3,})[^\n]*\n[\s\S]*?(\n\2[^\n]*(?=\n|$)|$)/g, blank).replace(/(`+)[^`\n]+?\1/g, blank);
}

// `@` must not follow a character that would make it part of a word, e-mail or URL; the handle
// must not continue into a domain (`@analyst.com`).
const MENTION = /(?<![\p{L}\p{N}_.+\-/@])@([\p{L}\p{N}_-]{1,64})(?![\p{L}\p{N}_-]|\.[\p{L}\p{N}])/gu;

/** Raw handles mentioned in `text`, in order, code and e-mail excluded. */
export function findHandles(text: string): string[] {
  const out: string[] = [];
  for (const m of stripCode(text).matchAll(MENTION)) out.push(m[1]!);
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
