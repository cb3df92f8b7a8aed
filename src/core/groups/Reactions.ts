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
 * What a reaction changes is decided in edits/decide.ts (`decideReaction`); this shell checks who
 * reacts and how often, reads the entry, and applies and commits the decision in the group's task.
 *
 * Who reacts is the caller's: the web API (a browser's client tag), Telegram and Discord reactions
 * (platformReactions.ts). An agent's `[REACT 👍]` (byKey `agent:<id>`) comes through `byAgent`,
 * in the same queue, recorded together with the agent's turn (core/router/agentReaction.ts); its
 * note carries the agent's id, so the agent's own mailbox skips it.
 */
import type { ReactionRequest } from '../gatewayApi.js';
import type { Store } from '../ports.js';
import type { RunningGroups } from '../peers.js';
import type { GroupDoc } from '../records.js';
import type { TranscriptEntry } from '../types.js';
import { StoreUnavailableError, UserError } from '../errors.js';
import type { GroupMailbox } from './GroupMailbox.js';
import { RateLimiter } from '../router/RateLimiter.js';
import { cleanDisplayName } from '../text/displayName.js';
import { isOneEmoji } from '../text/emoji.js';
import type { Decision } from './decision.js';
import { decideReaction } from '../edits/decide.js';
import type { GroupManager } from './GroupManager.js';
import { entryToChange } from './MessageEditor.js';

/** `limits.reactions_per_minute` when none is given. */
export const REACTIONS_PER_MINUTE = 30;
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
      const d = decideReaction(g, entry, { emoji, on: r.on, by: { key, name }, at: now });
      if (!d.result.changed) return d.result.entry;
      this.d.groups.apply(g, d);
      await this.d.groups.commit(g).durable;
      return d.result.entry;
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
    if (!found || found.g !== g || !this.d.groups.usable(g)) return write(null);
    let d: Decision<{ changed: boolean }>;
    try {
      d = decideReaction(g, found.entry, { emoji, on: true, by: { key: `agent:${agent.id}`, name: agent.name, agentId: agent.id }, at: this.d.now() });
    } catch (err) {
      // Not taken: the entry takes no reactions, or no other emoji.
      if (err instanceof UserError) return write(null);
      throw err;
    }
    if (!d.result.changed) return write('there');
    this.d.groups.apply(g, d);
    return write('added');
  }
}
