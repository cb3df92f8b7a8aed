/**
 * How chats join and leave a group's room: link codes made in one chat of the room and typed in
 * another (`/group link`, the web panel's "Link a chat"), and `/group unlink`. Each change is one
 * record of the room's group (its link, the code used up, the announcement posted to every chat
 * of the room), so a restart finds the room as it was left.
 *
 * A chat that joins while it has a group of its own leaves that group archived (as `/group
 * dissolve` does: its history stays). Only the instance that runs a group changes it: a code of
 * a group another instance runs is refused here, naming that instance.
 */
import type { Clock, Logger } from '../ports.js';
import type { GroupDoc } from '../records.js';
import type { ChatAddress, LinkedChat } from '../roomTypes.js';
import type { GroupView } from '../readModels.js';
import type { Recorder } from '../router/Recorder.js';
import type { GroupManager } from './GroupManager.js';
import type { GroupMailbox, GroupTask } from './GroupMailbox.js';
import { chatKeyOf, LINK_CODE_TTL_MS } from '../roomTypes.js';
import { UserError } from '../errors.js';
import { viewOf } from './groupReads.js';
import { chatName, chatsOf, groupOfCode, isHome, linkOf, listed, newLinkCode, normalizeLinkCode } from './linkCodes.js';

export interface RoomLinksDeps {
  groups: GroupManager;
  recorder: Recorder;
  clock: Clock;
  logger: Logger;
  /** A live group this instance runs, or a 404 / 409 (`not_owner`) UserError. */
  owned(id: string): GroupDoc;
  /** Each group's one writer: a link changes a group as a task of its mailbox. */
  mailbox: Pick<GroupMailbox, 'send'>;
}

/** What joining a room did: the room's group, and the chat's own group when it was archived. */
export interface Joined {
  g: GroupDoc;
  archived?: GroupDoc | undefined;
}

export class RoomLinks {
  constructor(private readonly d: RoomLinksDeps) {}

  /** A one-time code, made in chat `from` of the room, that links another chat to it. */
  makeCode(groupId: string, from: ChatAddress, via?: GroupTask): Promise<{ code: string; until: number }> {
    return this.d.mailbox.send(groupId, () => this.codeFor(groupId, from), via);
  }

  private async codeFor(groupId: string, from: ChatAddress): Promise<{ code: string; until: number }> {
    const g = this.d.owned(groupId);
    if (g.dmAgentId) throw new UserError('a private chat with one agent cannot be shared with other chats', 'private_chat', 409);
    const now = this.d.clock.now();
    const live = new Set((g.state.linkCodes ?? []).filter((k) => k.until > now).map((k) => k.code));
    let code = newLinkCode();
    while (live.has(code)) code = newLinkCode();
    const made = { code, until: now + LINK_CODE_TTL_MS, from: chatKeyOf(from) };
    this.d.groups.addLinkCode(g, made);
    await this.d.recorder.record(g);
    this.d.logger.info({ group: g.id, from: made.from }, 'link code made');
    return { code, until: made.until };
  }

  /**
   * Chat `chat` joins the room of the code typed there (`/group link <code>`). Refused: a private
   * chat, an unknown or expired code, a chat already in that room or linked into another one, a
   * chat whose own group is shared with other chats.
   */
  async joinChat(typed: string, chat: LinkedChat, opts: { isPrivate: boolean }, via?: GroupTask): Promise<Joined> {
    if (opts.isPrivate) throw new UserError('a private chat cannot join a room; type the code in a group chat or channel', 'private_chat', 409);
    const { g, code } = this.codeRoom(typed);
    if (isHome(g, chat) || linkOf(g, chat)) throw new UserError(`this chat is already part of the room “${g.title}”`, 'already_linked', 409);
    const own = this.d.groups.find(chat.channel, chat.chatId);
    if (own && !isHome(own, chat)) throw new UserError(`this chat is already linked into the room “${own.title}”; /group unlink it first`, 'linked_elsewhere', 409);
    if (own?.links?.length) throw new UserError(`this chat's group “${own.title}” is a room shared with ${listed(own.links.map(chatName))}; unlink those first`, 'linked_elsewhere', 409);
    // Both groups change here: refused at once when another instance runs either.
    this.d.owned(g.id);
    if (own) {
      this.d.owned(own.id);
      // The chat's own group first, as its own task (the command typed there may hold it), then the room's.
      await this.d.mailbox.send(own.id, async () => {
        this.d.groups.archive(own);
        await this.d.recorder.record(own);
      }, via);
      this.d.logger.info({ group: own.id, room: g.id }, 'a chat joined another room; its own group was archived');
    }
    await this.d.mailbox.send(g.id, () => this.link(g, chat, code.code), via);
    return { g, archived: own };
  }

  /** The web joins the room of a code (the web panel's "Link a chat"). */
  async joinWeb(typed: string, via?: GroupTask): Promise<GroupView> {
    const { g, code } = this.codeRoom(typed);
    if (g.channel === 'web') throw new UserError(`the room “${g.title}” is a web room already`, 'already_linked', 409);
    const chat = { channel: 'web' as const, chatId: g.id };
    if (linkOf(g, chat)) throw new UserError(`the room “${g.title}” is on the web already`, 'already_linked', 409);
    this.d.owned(g.id);
    await this.d.mailbox.send(g.id, () => this.link(g, { ...chat, title: g.title, at: this.d.clock.now() }, code.code), via);
    return viewOf(g);
  }

  /** A linked chat leaves the room; the home chat cannot (the room would be left without one). */
  unlink(groupId: string, chat: ChatAddress, via?: GroupTask): Promise<GroupView> {
    return this.d.mailbox.send(groupId, () => this.unlinkNow(groupId, chat), via);
  }

  private async unlinkNow(groupId: string, chat: ChatAddress): Promise<GroupView> {
    const g = this.d.owned(groupId);
    if (isHome(g, chat)) throw new UserError(`this is the room's home chat; unlink the other chats from them, or /group dissolve`, 'home_chat', 409);
    const link = linkOf(g, chat);
    if (!link) throw new UserError(`${chatName(chat)} is not linked to the room “${g.title}”`, 'not_linked', 404);
    this.d.groups.unlink(g, chat);
    await this.d.recorder.notice(g, `${capital(chatName(link))} left this room.`);
    this.d.logger.info({ group: g.id, chat: chatKeyOf(chat) }, 'a chat left the room');
    return viewOf(g);
  }

  /**
   * The config's `groups[].chats`: the room's other chats are linked at start, quietly (the
   * config says so; nobody typed a code). Already linked: nothing changes, so every start is the
   * same. A chat that has its own group gets it archived (its history is kept); one linked into
   * another room is left there, with a warning.
   */
  async declare(g: GroupDoc, chats: ReadonlyArray<{ channel: LinkedChat['channel']; chatId?: string | undefined }>): Promise<void> {
    try {
      this.d.owned(g.id);
    } catch {
      return; // its owner declares it
    }
    const joining: LinkedChat[] = [];
    for (const c of chats) {
      // A room's web chat is the group's own page.
      const chat = { channel: c.channel, chatId: c.channel === 'web' ? g.id : (c.chatId ?? '') };
      if (isHome(g, chat) || linkOf(g, chat)) continue;
      const own = this.d.groups.find(chat.channel, chat.chatId);
      if (own && (!isHome(own, chat) || own.links?.length)) {
        this.d.logger.warn({ group: g.id, chat: chatKeyOf(chat), other: own.id }, 'a declared chat of a room belongs to another room; left there (unlink it there to move it)');
        continue;
      }
      if (own) {
        try {
          this.d.owned(own.id);
        } catch (err) {
          this.d.logger.warn({ group: g.id, chat: chatKeyOf(chat), other: own.id, err: (err as Error).message }, 'a declared chat of a room has a group another instance runs; not linked now');
          continue;
        }
        await this.d.mailbox.send(own.id, async () => {
          this.d.groups.archive(own);
          await this.d.recorder.record(own);
        });
        this.d.logger.warn({ group: own.id, room: g.id, chat: chatKeyOf(chat) }, "a declared room's chat had a group of its own: that group is archived (its history is kept) and the chat joins the room");
      }
      joining.push({ ...chat, ...(chat.channel === 'web' ? { title: g.title } : {}), at: this.d.clock.now() });
    }
    if (joining.length === 0) return;
    await this.d.mailbox.send(g.id, async () => {
      for (const chat of joining) this.d.groups.link(g, chat);
      await this.d.recorder.record(g);
    });
  }

  /** Link a chat and announce it in every chat of the room (`code`: the code it used, gone now). */
  async link(g: GroupDoc, chat: LinkedChat, code?: string): Promise<void> {
    this.d.groups.link(g, chat, code);
    this.d.logger.info({ group: g.id, chat: chatKeyOf(chat) }, 'a chat joined the room');
    await this.d.recorder.notice(g, `${capital(chatName(chat))} joined. This room is now shared by ${listed(chatsOf(g).map(chatName))}.`);
  }

  /** The room of an unexpired code held here. */
  private codeRoom(typed: string): NonNullable<ReturnType<typeof groupOfCode>> {
    const code = normalizeLinkCode(typed);
    const found = code ? groupOfCode(this.d.groups.all(), code, this.d.clock.now()) : undefined;
    if (!found) throw new UserError(`no valid link code "${typed}": it is mistyped, used already or older than ${LINK_CODE_TTL_MS / 60_000} minutes; make a new one with /group link in the room`, 'unknown_code', 404);
    return found;
  }
}

function capital(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
