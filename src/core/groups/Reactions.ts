/**
 * People react to messages with emoji. A reaction is an edit of the entry (records.ts,
 * `EntryEdit.reactions`: the entry's whole list after the change, with the rest of its edit state),
 * so both stores apply it to the entries they read back and the page is told live (`edited`).
 *
 * Adding one also leaves a note entry for the agents, in the same record ("Maya reacted 👍 to
 * Analyst's message: "…""): an observation in their next prompt, where notes in a row about one
 * message fold into one line (session/reactionNotes.ts). Nothing else happens: a reaction never
 * starts a round. Removing one leaves no note.
 *
 * One reaction per emoji per person (`byKey`); adding one that is there or removing one that is
 * not changes nothing. Changes of one group's entries run one after another, with edits and
 * deletions (MessageEditor), so each reads the state the previous one left.
 *
 * Who reacts is the caller's: the web API (a browser's client tag), Telegram and Discord reactions
 * (platformReactions.ts). An agent's `[REACT 👍]` (byKey `agent:<id>`) comes through `byAgent`,
 * in the same queue, recorded together with the agent's turn (core/router/agentReaction.ts); its
 * note carries the agent's id, so the agent's own mailbox skips it.
 */
import type { ReactionRequest } from '../gatewayApi.js';
import type { Store } from '../ports.js';
import type { RunningGroups } from '../peers.js';
import type { EntryEdit, GroupDoc } from '../records.js';
import type { Reaction, TranscriptEntry } from '../types.js';
import { StoreUnavailableError, UserError } from '../errors.js';
import type { GroupMailbox } from './GroupMailbox.js';
import { RateLimiter } from '../router/RateLimiter.js';
import { reactionNoteText } from '../session/reactionNotes.js';
import { cleanDisplayName } from '../text/displayName.js';
import { isOneEmoji } from '../text/emoji.js';
import { edited } from './entryEdit.js';
import type { GroupManager } from './GroupManager.js';
import { entryToChange } from './MessageEditor.js';

/** `limits.reactions_per_minute` when none is given. */
export const REACTIONS_PER_MINUTE = 30;
/** Different emoji one message may carry: its list (written with every later change of it) stays small. */
export const MAX_EMOJI_PER_ENTRY = 20;
/** Notes about one message (its edits and reactions) past which a reaction adds none: the agents have heard. */
const MAX_NOTES = 100;
/** The longest `byKey` taken. */
const MAX_KEY = 200;

export interface ReactionsDeps {
  groups: GroupManager;
  store: Store;
  now(): number;
  /** The groups this process runs: another instance's group is changed by its owner. */
  running: RunningGroups;
  /** Shared with MessageEditor: one group's entry changes run one after another. */
  /** Each group's one writer: an edit or a reaction is a task of its group's mailbox. */
  mailbox: Pick<GroupMailbox, 'send'>;
  /** `limits.reactions_per_minute`, per person per group. */
  perMinute?: number | undefined;
}

export class Reactions {
  private readonly rate: RateLimiter;

  constructor(private readonly d: ReactionsDeps) {
    this.rate = new RateLimiter(d.perMinute ?? REACTIONS_PER_MINUTE, 60_000);
  }

  /**
   * Add or remove one reaction; returns the entry as it now is. UserError: 400 `invalid_emoji`,
   * 429 `rate_limited` (with `retryAfterSeconds`), 404 unknown group or entry, 409
   * `not_reactable` (deleted, a note, a decision line, hidden from agents) or
   * `too_many_reactions`; StoreUnavailableError when it could not be recorded (nothing is kept)
   * or another instance runs the group.
   */
  async react(groupId: string, entryId: string, r: ReactionRequest): Promise<TranscriptEntry> {
    const emoji = r.emoji.trim();
    if (!isOneEmoji(emoji)) throw new UserError('a reaction is one emoji', 'invalid_emoji', 400);
    const key = r.by.key;
    if (!key || key.length > MAX_KEY) throw new UserError('who reacts is not known', 'bad_request', 400);
    const name = cleanDisplayName(r.by.name) || 'someone';
    return this.d.mailbox.send(groupId, async () => {
      const g = this.d.groups.require(groupId);
      // After a failed write its memory may be ahead of the store (this reaction there, unrecorded):
      // refused until it is read back, and not counted against the rate limit (a redelivery comes again).
      if (!this.d.groups.usable(g)) throw new StoreUnavailableError(`group ${g.id} is being reloaded after a failed write; try again`);
      const now = this.d.now();
      const rateKey = `${g.id}\n${r.rateKey ?? key}`;
      if (!this.rate.allow(rateKey, now)) {
        const wait = Math.max(1, Math.ceil(this.rate.retryAfterMs(rateKey, now) / 1000));
        throw new UserError(`you are reacting faster than ${this.d.perMinute ?? REACTIONS_PER_MINUTE} times a minute; please wait a moment`, 'rate_limited', 429, wait);
      }
      const { entry } = await entryToChange(this.d, groupId, entryId);
      const why = notReactable(entry);
      if (why) throw new UserError(why, 'not_reactable', 409);
      const list = entry.reactions ?? [];
      const mine = (x: Reaction) => x.byKey === key && x.emoji === emoji;
      // Idempotent: nothing to record.
      if (list.some(mine) === r.on) return { ...entry };
      if (r.on && !list.some((x) => x.emoji === emoji) && new Set(list.map((x) => x.emoji)).size >= MAX_EMOJI_PER_ENTRY) {
        throw new UserError(`a message takes at most ${MAX_EMOJI_PER_ENTRY} different emoji`, 'too_many_reactions', 409);
      }
      const reactions = r.on ? [...list, { emoji, by: name, byKey: key, at: now }] : list.filter((x) => !mine(x));
      const ed = this.change(g, entry, now, reactions, r.on ? { emoji, by: name } : null);
      await this.d.groups.commit(g).durable;
      return edited(entry, ed);
    });
  }

  /**
   * Agent `agent` reacts `emoji` (one emoji, already checked) to entry `entryId`, called by the
   * agent's turn, which holds the group (people's reactions, edits and deletions are tasks of the
   * same mailbox, so none of them runs meanwhile). The reaction and its note
   * are left as pending changes; `write` then records the agent's turn, synchronously up to its
   * commit, so both are one record. `write` is told `added`, `there` (the agent had reacted so
   * before: nothing changes) or null: not taken — the entry is gone or not in this group any
   * more, takes no reactions or no other emoji — and nothing is left pending. No rate limit: an
   * agent reacts at most once a turn.
   */
  async byAgent<T>(g: GroupDoc, entryId: string, agent: { id: string; name: string }, emoji: string, write: (how: 'added' | 'there' | null) => Promise<T>): Promise<T> {
    const found = await entryToChange(this.d, g.id, entryId).catch(() => null);
    const entry = found?.g === g && this.d.groups.usable(g) && !notReactable(found.entry) ? found.entry : null;
    if (!entry) return write(null);
    const key = `agent:${agent.id}`;
    const list = entry.reactions ?? [];
    if (list.some((x) => x.byKey === key && x.emoji === emoji)) return write('there');
    if (!list.some((x) => x.emoji === emoji) && new Set(list.map((x) => x.emoji)).size >= MAX_EMOJI_PER_ENTRY) return write(null);
    const now = this.d.now();
    this.change(g, entry, now, [...list, { emoji, by: agent.name, byKey: key, at: now }], { emoji, by: agent.name, agentId: agent.id });
    return write('added');
  }

  /**
   * The entry's reactions are now `reactions`: the edit, and a note for the agents when one was
   * added (`added`), as pending changes of the group. Returns the edit.
   */
  private change(g: GroupDoc, entry: TranscriptEntry, now: number, reactions: Reaction[], added: { emoji: string; by: string; agentId?: string } | null): EntryEdit {
    let notes = entry.editNotes ?? [];
    if (added && notes.length < MAX_NOTES) {
      const { emoji, by, agentId } = added;
      const note = this.d.groups.append(g, { kind: 'system', authorId: 'system', authorName: 'Chorus', ...(agentId ? { agentId } : {}), text: reactionNoteText(by, emoji, entry.authorName, entry.text), reactionOf: { id: entry.id, emoji, by }, ts: now });
      notes = [...notes, note.seq];
    }
    // The whole edit state: an edited message's text and time stay as they are.
    const ed: EntryEdit = {
      seq: entry.seq,
      at: now,
      ...(entry.editedAt !== undefined ? { text: entry.text, editedAt: entry.editedAt } : {}),
      ...(notes.length ? { notes } : {}),
      reactions,
    };
    this.d.groups.edit(g, ed);
    return ed;
  }
}

/** Why an entry takes no reactions, or null when it does. */
function notReactable(e: TranscriptEntry): string | null {
  if (e.deleted) return 'this message was deleted';
  if (e.editOf || e.reactionOf) return 'a note about another message takes no reactions';
  if (e.kind === 'decision') return 'a decision line takes no reactions';
  if (e.hiddenFromAgents) return 'a command or its answer takes no reactions';
  return null;
}
