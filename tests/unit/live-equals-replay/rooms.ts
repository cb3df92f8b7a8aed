/**
 * Rooms across chats, for the live-equals-replay property (../live-equals-replay.test.ts).
 *
 * A room case is the same web group with up to three more chats — a Telegram group and two
 * Discord channels, each a FakeChannel whose posts, relays, edits and removals succeed, fail in
 * passing, are refused for good, or are taken by the platform with the answer lost ("unsure").
 * Everything goes through the real paths: chats declared in the config's `groups[].chats` are
 * linked at start; `/group link` makes a code (in the web room or a linked chat) and
 * `/group link <code>` typed in another chat uses it (also too late, or never); `/group unlink`
 * (or the web panel's unlink) lets a chat go; people and foreign bots write in any chat of the
 * room (their messages get an `origin` and copies), reply to relayed copies, edit and delete
 * their messages on the platform (edits and deletions `carry` to the copies); a Telegram chat
 * migrates to a new id (`rekey.from`). Each chat's delivery queue (ChatDelivery) records the
 * outcomes, per chat, as the fakes answer.
 *
 * Nothing here compares anything: the property compares the whole group (its `links`,
 * `state.carry`, `state.linkCodes`, and every entry's `origin`, `copies`, `authorKind`) after
 * each record.
 */
import fc from 'fast-check';
import type { GroupRouter } from '../../../src/core/router/GroupRouter.js';
import type { DeclaredGroup } from '../../../src/core/router/declaredGroups.js';
import type { ChannelKind, InboundMessage } from '../../../src/core/types.js';
import type { ChatAddress } from '../../../src/core/roomTypes.js';
import type { GroupRecord } from '../../../src/core/records.js';
import { LINK_CODE_TTL_MS } from '../../../src/core/roomTypes.js';
import { UserError } from '../../../src/core/errors.js';
import { FakeChannel, type FakeFault } from '../../helpers/fake-channel.js';
import type { FakeClock } from '../../helpers/fake-clock.js';

const AGENT_IDS = ['analyst', 'writer', 'critic'] as const;
type AgentId = (typeof AGENT_IDS)[number];

/** The chats a room may gain, by number (their ids as at the start of a case). */
const CHATS: ReadonlyArray<{ channel: 'telegram' | 'discord'; chatId: string; title: string }> = [
  { channel: 'telegram', chatId: '-100777', title: 'Team chat' },
  { channel: 'discord', chatId: 'd-general', title: '#general' },
  { channel: 'discord', chatId: 'd-ops', title: '#ops' },
];
type ChatNo = 0 | 1 | 2;
const chatNoArb = fc.constantFrom<ChatNo>(0, 1, 2);
/** A chat's fault, or none (weighted towards none: most posts go through). */
const faultArb = fc.constantFrom<FakeFault | null>(null, null, null, 'down', 'refuse', 'unsure');

export interface RoomCase {
  /** Chats the config declares with the web room (`groups[].chats`): linked at start. */
  declared: ChatNo[];
  /** Each chat's fault at the start (the web home's last). */
  faults: Array<FakeFault | null>;
}

export type RoomInput =
  /** Someone writes in a chat of the room (`chat` picks among the linked ones): a person or a foreign bot. */
  | { k: 'from'; chat: number; to: AgentId[]; bot: boolean; reply: number | null; wait: boolean }
  /** `/group link` made in the web room or a linked chat (`madeIn`), then typed in chat `chat` (or never, or too late). */
  | { k: 'link'; chat: ChatNo; madeIn: number; ephemeral: boolean; use: 'now' | 'late' | 'never' }
  /** A chat of the room leaves (`chat` 0: the home, refused), by command or through the web panel. */
  | { k: 'unlink'; chat: number; api: boolean }
  /** A chat's platform starts or stops failing (`chat` 3: the web home). */
  | { k: 'fault'; chat: ChatNo | 3; fault: FakeFault | null }
  /** The author edits or deletes a message on its platform (or someone else tries to). */
  | { k: 'platform-edit'; of: number; deleted: boolean; byOther: boolean }
  /** A linked Telegram group becomes a supergroup: its chat id changes. */
  | { k: 'migrate' };

export const roomCaseArb: fc.Arbitrary<RoomCase> = fc.record({
  declared: fc.subarray<ChatNo>([0, 1, 2]),
  faults: fc.tuple(faultArb, faultArb, faultArb, fc.constantFrom<FakeFault | null>(null, null, null, null, 'down', 'unsure')),
});

export const roomInputArb: fc.Arbitrary<RoomInput> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ k: fc.constant('from' as const), chat: fc.nat(5), to: fc.subarray([...AGENT_IDS], { maxLength: 2 }), bot: fc.integer({ min: 0, max: 9 }).map((x) => x < 2), reply: fc.option(fc.nat(20), { freq: 3 }), wait: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('link' as const), chat: chatNoArb, madeIn: fc.nat(3), ephemeral: fc.boolean(), use: fc.constantFrom('now' as const, 'now' as const, 'now' as const, 'late' as const, 'never' as const) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('unlink' as const), chat: fc.nat(3), api: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('fault' as const), chat: fc.constantFrom<ChatNo | 3>(0, 1, 2, 3), fault: faultArb }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('platform-edit' as const), of: fc.nat(20), deleted: fc.boolean(), byOther: fc.integer({ min: 0, max: 9 }).map((x) => x < 2) }) },
  { weight: 1, arbitrary: fc.constant({ k: 'migrate' as const }) },
);

/** What a room step needs of the case's rig. */
export interface RoomRig {
  id: string;
  router: GroupRouter;
  clock: FakeClock;
  /** Messages sent so far (the property's duplicates pick from them). */
  sent: InboundMessage[];
  n: number;
  /** Wait until the router is idle or waits on the test (the property's quiesce). */
  quiesce(): Promise<boolean>;
}

/** The platforms of one case: the web home and the chats it may link, with their faults. */
export class RoomWorld {
  readonly web = new FakeChannel('web');
  readonly telegram = new FakeChannel('telegram');
  readonly discord = new FakeChannel('discord');
  /** Each chat's id now (a Telegram migration changes it). */
  private readonly ids: string[] = CHATS.map((c) => c.chatId);
  /** Chat id → its fault. */
  private readonly faults = new Map<string, FakeFault>();
  private migrations = 0;

  constructor(
    readonly id: string,
    readonly room: RoomCase | null,
  ) {
    for (const c of this.channels()) c.fault = (chatId) => this.faults.get(chatId);
    room?.faults.forEach((f, i) => this.setFault(i as ChatNo | 3, f));
  }

  channels(): FakeChannel[] {
    return this.room ? [this.web, this.telegram, this.discord] : [this.web];
  }

  /** The config's group, when the room is declared there with other chats (else it is created on the web). */
  declared(participants: string[]): DeclaredGroup[] {
    if (!this.room?.declared.length) return [];
    return [{ channel: 'web', chatId: this.id, title: 'Room', participants, links: this.room.declared.map((n) => ({ channel: CHATS[n]!.channel, chatId: this.ids[n]! })) }];
  }

  /** The platforms stop failing (the end of a case: what is owed can be delivered). */
  calm(): void {
    this.faults.clear();
  }

  private setFault(chat: ChatNo | 3, fault: FakeFault | null): void {
    const id = chat === 3 ? this.id : this.ids[chat]!;
    if (fault) this.faults.set(id, fault);
    else this.faults.delete(id);
  }

  private chat(n: ChatNo): ChatAddress & { title: string } {
    return { channel: CHATS[n]!.channel, chatId: this.ids[n]!, title: CHATS[n]!.title };
  }

  private channelOf(kind: ChannelKind): FakeChannel {
    return kind === 'telegram' ? this.telegram : kind === 'discord' ? this.discord : this.web;
  }

  /** One room input, through the real paths. */
  async step(r: RoomRig, inp: RoomInput): Promise<void> {
    const g = r.router.groups.get(r.id);
    // A dissolved group's chats are no room any more; messages there would start other groups.
    if (!g || g.state.archived) return;
    const linked = (g.links ?? []).filter((l) => l.channel !== 'web');
    const send = (chat: ChatAddress, text: string, extra: Partial<InboundMessage> = {}) => r.router.handle({ kind: 'message', message: this.message(r, chat, text, extra) });
    switch (inp.k) {
      case 'from': {
        const chat = linked[inp.chat % Math.max(1, linked.length)];
        if (!chat) return;
        const mentions = inp.to.map((a) => ` @${a}`).join('');
        // A reply to something posted there: a relayed copy, an agent's post, or a notice.
        const fake = this.channelOf(chat.channel);
        const there = [...fake.posts, ...fake.relayed].filter((p) => p.chatId === chat.chatId).map((p) => p.id);
        const replyToPlatformId = inp.reply !== null && there.length ? there[there.length - 1 - (inp.reply % there.length)] : undefined;
        const author = inp.bot ? { id: 'helper-bot', name: 'HelperBot' } : { id: `${chat.channel}-maya`, name: 'Maya' };
        const msg = this.message(r, chat, `from ${chat.channel} ${r.n}${mentions}`, { author, ...(inp.bot ? { authorKind: 'bot' as const } : {}), replyToPlatformId });
        r.sent.push(msg);
        await r.router.handle({ kind: 'message', message: msg });
        return;
      }
      case 'link': {
        const home = { channel: 'web' as const, chatId: r.id };
        const from = inp.madeIn === 0 || !linked.length ? home : linked[(inp.madeIn - 1) % linked.length]!;
        const before = new Set((g.state.linkCodes ?? []).map((c) => c.code));
        await send(from, '/group link', { ephemeral: from.channel === 'web' && inp.ephemeral });
        await r.quiesce();
        const made = (g.state.linkCodes ?? []).find((c) => !before.has(c.code));
        if (!made || inp.use === 'never') return;
        if (inp.use === 'late') await r.clock.advance(LINK_CODE_TTL_MS);
        const chat = this.chat(inp.chat);
        // Typed as people do: lower case, a space for the dash.
        await send(chat, `/group link ${made.code.toLowerCase().replace('-', ' ')}`, { chatTitle: chat.title });
        return;
      }
      case 'unlink': {
        const chats = [{ channel: 'web' as const, chatId: r.id }, ...linked];
        const chat = chats[inp.chat % chats.length]!;
        if (!inp.api) {
          await send(chat, '/group unlink');
          return;
        }
        try {
          await r.router.gateway.links.unlink(r.id, chat);
        } catch (err) {
          if (!(err instanceof UserError)) throw err;
        }
        return;
      }
      case 'fault':
        this.setFault(inp.chat, inp.fault);
        return;
      case 'platform-edit': {
        const theirs = g.transcript.filter((e) => e.kind === 'human' && e.origin && !e.deleted && e.platformMessageId);
        const e = theirs[inp.of % Math.max(1, theirs.length)];
        if (!e) return;
        const [channel, authorId] = [e.origin!.channel, e.authorId.slice(e.authorId.indexOf(':') + 1)];
        const author = inp.byOther ? { id: 'sam', name: 'Sam' } : { id: authorId, name: e.authorName };
        await r.router.handle({ kind: 'edit', edit: { channel, chatId: e.origin!.chatId, platformMessageId: e.platformMessageId!, author, ...(inp.deleted ? { deleted: true as const } : { text: `${e.text} (edited ${r.n++})` }) } });
        return;
      }
      case 'migrate': {
        // The Telegram group (chat 0), linked or not: a group not in the room changes nothing here.
        const old = this.ids[0]!;
        const fault = this.faults.get(old);
        const next = `${CHATS[0]!.chatId}${++this.migrations}`;
        this.ids[0] = next;
        // The platform's fault goes with the chat.
        this.faults.delete(old);
        if (fault) this.faults.set(next, fault);
        await r.router.handle({ kind: 'rekey', channel: 'telegram', oldChatId: old, newChatId: next });
        return;
      }
    }
  }

  /** A message in `chat`, by Maya unless said otherwise. */
  message(r: RoomRig, chat: ChatAddress, text: string, extra: Partial<InboundMessage> = {}): InboundMessage {
    const web = chat.channel === 'web';
    return { channel: chat.channel, chatId: chat.chatId, messageId: `${chat.channel}-${++r.n}`, author: { id: web ? 'maya' : `${chat.channel}-maya`, name: 'Maya' }, text, ts: r.clock.now(), ...(web ? { clientTag: 'maya-browser' } : {}), ...extra };
  }

  /**
   * The end of a case: the platforms work again, and the clock moves until each chat's queue has
   * delivered what it is owed (bounded: the property compares whatever is held then).
   */
  async deliverAll(r: RoomRig): Promise<void> {
    if (!this.room) return;
    this.calm();
    const owed = () => {
      const g = r.router.groups.get(r.id);
      return !!g && !!g.links?.length && (g.undelivered.length > 0 || !!g.state.carry?.length);
    };
    for (let i = 0; i < 40 && owed(); i++) {
      await r.clock.advance(30_000);
      for (let j = 0; j < 5; j++) await new Promise<void>((res) => setImmediate(res));
      await r.router.groups.settle();
    }
    await r.router.groups.settle();
  }
}

/**
 * What the room cases' records held, counted over a run (printed with CHORUS_PBT_STATS=1): a
 * generator that stopped reaching links, per-chat outcomes or carried edits shows here as zeros.
 */
export const roomTally = new Map<string, number>();

export function tally(records: readonly GroupRecord[]): void {
  const add = (k: string) => roomTally.set(k, (roomTally.get(k) ?? 0) + 1);
  add('cases');
  for (const rec of records) {
    for (const c of rec.changes ?? []) if (['link', 'unlink', 'link-code', 'carry', 'carried', 'rekey'].includes(c.t)) add(c.t === 'rekey' && 'from' in c && c.from ? 'rekey.from' : c.t);
    for (const d of rec.delivery ?? []) add(`outcome ${d.chat ? 'copy' : 'home'} ${d.delivery}`);
    for (const e of rec.entries ?? []) {
      if (e.origin) add('entry with origin');
      if (e.authorKind === 'bot') add('entry by a foreign bot');
      if (e.copies) add('entry with copies');
    }
  }
}
