/**
 * Link codes (`/group link`) and the names a room's chats are announced by. A code is six
 * characters of an alphabet without look-alikes (no 0/O, 1/I/L), shown as `K7P-4QX` and taken
 * whatever the case or dashes it is typed with: 31⁶ ≈ 8.9 × 10⁸ codes, each valid ten minutes and
 * typed only by a chat admin, so guessing one is out of reach.
 */
import { randomInt } from 'node:crypto';
import type { GroupDoc } from '../records.js';
import type { ChatAddress, LinkCode, LinkedChat } from '../roomTypes.js';

const ALPHABET = '23456789ABCDEFGHJKMNPQRSTUVWXYZ';
const LENGTH = 6;

/** A fresh code, `XXX-XXX`. */
export function newLinkCode(): string {
  let s = '';
  for (let i = 0; i < LENGTH; i++) s += ALPHABET[randomInt(ALPHABET.length)];
  return `${s.slice(0, 3)}-${s.slice(3)}`;
}

/** A code as typed (`k7p4qx`, `K7P 4QX`) in the form it is kept; null when it cannot be one. */
export function normalizeLinkCode(typed: string): string | null {
  const s = typed.toUpperCase().replace(/[\s-]/g, '');
  if (s.length !== LENGTH || [...s].some((c) => !ALPHABET.includes(c))) return null;
  return `${s.slice(0, 3)}-${s.slice(3)}`;
}

/** The live group holding this unexpired code, among `groups`. */
export function groupOfCode(groups: Iterable<GroupDoc>, code: string, now: number): { g: GroupDoc; code: LinkCode } | undefined {
  for (const g of groups) {
    if (g.state.archived) continue;
    const k = g.state.linkCodes?.find((x) => x.code === code && x.until > now);
    if (k) return { g, code: k };
  }
  return undefined;
}

/** Every chat of the group's room, its home first. */
export function chatsOf(g: GroupDoc): LinkedChat[] {
  return [{ channel: g.channel, chatId: g.chatId, title: g.title, at: g.createdAt }, ...(g.links ?? [])];
}

/** Is this chat the group's home chat? */
export function isHome(g: GroupDoc, c: ChatAddress): boolean {
  return g.channel === c.channel && g.chatId === c.chatId;
}

/** The linked chat of the room at this address, if any. */
export function linkOf(g: GroupDoc, c: ChatAddress): LinkedChat | undefined {
  return g.links?.find((l) => l.channel === c.channel && l.chatId === c.chatId);
}

/** How announcements name a chat: `Discord #general`, `Telegram “Team chat”`, `the web room Team`. */
export function chatName(c: ChatAddress & { title?: string | undefined }): string {
  const title = c.title?.trim();
  switch (c.channel) {
    case 'telegram':
      return title ? `Telegram “${title}”` : `Telegram chat ${c.chatId}`;
    case 'discord':
      return title ? `Discord ${title.startsWith('#') ? title : `#${title}`}` : `Discord channel ${c.chatId}`;
    default:
      return `the web room ${title || c.chatId}`;
  }
}

/** `A`, `A and B`, `A, B and C`. */
export function listed(names: string[]): string {
  return names.length <= 1 ? (names[0] ?? '') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)!}`;
}
