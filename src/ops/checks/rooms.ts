/**
 * Doctor checks of rooms across chats that need no platform: which chats each group lives in —
 * its home and the chats linked to its room, from the config (`groups[i].chats`) and from the
 * groups in data_dir (links made with /group link) — a chat that two groups claim, and a chat of a
 * room whose channel is not enabled, so nothing is posted there. The config rules refuse both for
 * declared groups already; a link made in chat can still meet a declared group, or outlive its
 * channel being switched off. The platform checks of these chats (bots, relay bot, webhooks) are
 * made by the Telegram and Discord checks, which are handed the chats listed here.
 */
import type { ChorusConfig } from '../../config/schema.js';
import type { ChannelKind } from '../../core/types.js';
import type { PeekedGroup } from '../../store/files/peek.js';
import { fail, type Finding } from '../findings.js';

/** One chat of a group, and where it is listed (`groups[1].chats[2]`, or `group <id>` in data_dir). */
export interface RoomChat {
  channel: ChannelKind;
  /** Absent for a room's web chat declared without an id (its page is found by the group's id). */
  chatId: string | undefined;
  key: string;
  /** Listed in data_dir only (linked with /group link): undone with /group unlink there. */
  linked: boolean;
}

/** A group Chorus knows, with every chat it lives in, its home first. */
export interface KnownGroup {
  title: string;
  participants: string[];
  chats: RoomChat[];
}

/**
 * The groups of the config, then those of data_dir that are not one of them (a declared group is
 * found in data_dir by its home chat; the links recorded there join its chats).
 */
export function knownGroups(config: ChorusConfig, stored: readonly PeekedGroup[]): KnownGroup[] {
  const out: KnownGroup[] = config.groups.map((g, i) => ({
    title: g.title ?? g.chat_id,
    participants: g.participants,
    chats: g.chats
      ? g.chats.map((c, j) => ({ channel: c.channel, chatId: c.chat_id, key: `groups[${i}].chats[${j}]`, linked: false }))
      : [{ channel: g.channel, chatId: g.chat_id, key: `groups[${i}]`, linked: false }],
  }));
  for (const s of stored) {
    const home = out.slice(0, config.groups.length).find((g) => g.chats[0]!.channel === s.channel && g.chats[0]!.chatId === s.chatId);
    const group = home ?? { title: s.title, participants: s.participants, chats: [{ channel: s.channel, chatId: s.chatId, key: `group ${s.id}`, linked: false }] };
    for (const l of s.links) {
      if (group.chats.some((c) => c.channel === l.channel && (c.chatId === l.chatId || (c.channel === 'web' && c.chatId === undefined)))) continue;
      group.chats.push({ channel: l.channel, chatId: l.chatId, key: `group ${s.id} link ${l.channel}:${l.chatId}`, linked: true });
    }
    if (!home) out.push(group);
  }
  return out;
}

/** The chats on `channel` of the groups, each once, with the group's title and participants. */
export function chatsOn(groups: readonly KnownGroup[], channel: ChannelKind, roomsOnly = false): Array<{ chatId: string; title: string; participants: string[] }> {
  const out = new Map<string, { chatId: string; title: string; participants: string[] }>();
  for (const g of groups) {
    if (roomsOnly && g.chats.length < 2) continue;
    for (const c of g.chats) if (c.channel === channel && c.chatId !== undefined) out.set(c.chatId, { chatId: c.chatId, title: g.title, participants: g.participants });
  }
  return [...out.values()];
}

/** A chat two groups claim; a chat of a room on a channel that is not enabled. One line each. */
export function roomFindings(config: ChorusConfig, groups: readonly KnownGroup[]): Finding[] {
  const out: Finding[] = [];
  const owner = new Map<string, { group: KnownGroup; chat: RoomChat }>();
  for (const g of groups) {
    for (const c of g.chats) {
      if (c.chatId === undefined) continue;
      const at = `${c.channel}:${c.chatId}`;
      const first = owner.get(at);
      if (!first) {
        owner.set(at, { group: g, chat: c });
        continue;
      }
      if (first.group === g) continue;
      const undo = [first.chat, c].find((x) => x.linked);
      out.push(fail(`room chat ${at}`, `is a chat of two groups, ${first.chat.key} and ${c.key}; a chat belongs to one group, so its messages would go to either`, undo ? `type /group unlink in that chat to take it out of the room it was linked to (${undo.key}), or remove it from the config` : `remove it from ${first.chat.key} or from ${c.key}`));
    }
    if (g.chats.length < 2) continue;
    for (const c of g.chats) {
      if (c.channel === 'web' || config.channels[c.channel].enabled) continue;
      const fix = c.linked ? `enable channels.${c.channel}, or take the chat out of the room (/group unlink there while it is enabled)` : `enable channels.${c.channel}, or remove ${c.key} from the config`;
      out.push(fail(c.key, `a ${c.channel} chat (${c.chatId}) of the room "${g.title}", but channels.${c.channel}.enabled is false: nothing of the room is posted there and nothing from it is read`, fix));
    }
  }
  return out;
}
