/**
 * A person edits or deletes their own message (the web page: the browser that sent it).
 *
 * An edit is a record of its own: the entry's new text (`edits` of the record; the old text stays
 * in the log), a note entry for the agents ("Maya edited their message: …", an observation in
 * their next prompt; the page draws no line for it, the message itself says "edited"), and each
 * agent's memory brought to the new text, so that a later deletion has one text to take out.
 *
 * What each changes is decided in edits/decide.ts (`decideEdit`, `decideDeletion`); this shell
 * checks who may, reads the entry, and applies and commits the decision in the group's task.
 *
 * A deletion hides the text from everyone: the entry and the notes about it (its edits, its
 * reactions) become deleted (mailboxes skip them, stores read them back without text), its
 * reactions and files go with it, and every agent's history and summary are rewritten without it
 * (the files it carried are taken from the turns that sent them). A turn
 * that was built before the deletion and is recorded after it is rewritten too, as it is
 * recorded (`GroupManager.turnFilter`).
 */
import type { Store } from '../ports.js';
import type { RunningGroups } from '../peers.js';
import type { GroupDoc } from '../records.js';
import type { ChatTurn, TranscriptEntry } from '../types.js';
import { StoreUnavailableError, UserError } from '../errors.js';
import { redactTurns } from './entryEdit.js';
import { decideDeletion, decideEdit } from '../edits/decide.js';
import { entryAt, seqOfId } from './evolve.js';
import type { GroupManager } from './GroupManager.js';
import type { GroupMailbox } from './GroupMailbox.js';

/** Who changes a message: the browser that sent it, or its author on a platform (checked by the caller). */
type Who = { clientTag: string | undefined; platform?: true | undefined };

/** How long a deleted text is still looked for in turns being recorded (a turn built before it). */
const IN_FLIGHT_MS = 30 * 60 * 1000;

export interface MessageEditorDeps {
  groups: GroupManager;
  store: Store;
  now(): number;
  /** The groups this process runs: another instance's group is edited by its owner. */
  running: RunningGroups;
  /**
   * Per group, every change of an entry's edit state (edits, deletions, reactions) runs one after
   * another: each reads the state the previous one left, also of an entry read from the store.
   */
  /** Each group's one writer: an edit or a reaction is a task of its group's mailbox. */
  mailbox: Pick<GroupMailbox, 'send'>;
}

export class MessageEditor {
  /** Per group: texts deleted lately, with when to stop looking for them in recorded turns. */
  private readonly gone = new Map<string, Array<{ entry: TranscriptEntry; until: number }>>();

  constructor(private readonly d: MessageEditorDeps) {
    d.groups.turnFilter = (g, turns) => this.filter(g, turns);
  }

  /**
   * `by.platform`: the edit was made on a platform by the message's author (Telegram, Discord),
   * checked by the caller, instead of by the browser `clientTag`.
   */
  async edit(groupId: string, entryId: string, by: Who & { text: string; maxChars: number }): Promise<TranscriptEntry> {
    const text = by.text.trim();
    if (!text) throw new UserError('the new text is empty; delete the message instead', 'empty', 400);
    if (text.length > by.maxChars) throw new UserError(`the new text is too long (${text.length} characters; the limit is ${by.maxChars})`, 'too_long', 400);
    return this.serial(groupId, async () => {
      const { g, entry } = await this.mine(groupId, entryId, by);
      const d = decideEdit(g, entry, { text, at: this.d.now() });
      if (d.entries.length === 0) return d.result;
      this.d.groups.apply(g, d);
      await this.d.groups.commit(g).durable;
      return d.result;
    });
  }

  remove(groupId: string, entryId: string, by: Who): Promise<TranscriptEntry> {
    return this.serial(groupId, async () => {
      const { g, entry } = await this.mine(groupId, entryId, by);
      // The entry as it was: applying the decision changes the copy in memory.
      const before = { ...entry };
      const at = this.d.now();
      const d = decideDeletion(g, entry, { at });
      this.d.groups.apply(g, d);
      await this.d.groups.commit(g).durable;
      const list = (this.gone.get(g.id) ?? []).filter((x) => x.until > at);
      list.push({ entry: before, until: at + IN_FLIGHT_MS });
      this.gone.set(g.id, list);
      return d.result;
    });
  }

  /** The entry `entryId` of a group this instance runs, if it is a message `who` sent and may still change. */
  private async mine(groupId: string, entryId: string, who: Who): Promise<{ g: GroupDoc; entry: TranscriptEntry }> {
    const { g, entry } = await entryToChange(this.d, groupId, entryId);
    if (entry.kind !== 'human' || entry.hiddenFromAgents) throw new UserError('only a person\'s message can be edited or deleted', 'not_editable', 409);
    if (!who.platform && (!who.clientTag || entry.clientTag !== who.clientTag)) throw new UserError('only the browser that sent a message can edit or delete it', 'forbidden', 403);
    if (entry.deleted) throw new UserError('this message was deleted', 'deleted', 409);
    return { g, entry };
  }

  private filter(g: GroupDoc, turns: ChatTurn[]): ChatTurn[] {
    const list = this.gone.get(g.id);
    return list?.length ? redactTurns(turns, list) : turns;
  }

  private serial<T>(groupId: string, fn: () => Promise<T>): Promise<T> {
    return this.d.mailbox.send(groupId, fn);
  }
}

/**
 * Entry `entryId` of a group this instance runs, as it is now: from the in-memory tail, or read
 * from the store when it is older. A 404 UserError for an unknown group or entry; another
 * instance's group is a StoreUnavailableError (503: its owner changes it).
 */
export async function entryToChange(d: { groups: GroupManager; store: Store; running: RunningGroups }, groupId: string, entryId: string): Promise<{ g: GroupDoc; entry: TranscriptEntry }> {
  const g = d.groups.require(groupId);
  if (!d.running.runs(g.id)) throw new StoreUnavailableError(`group ${g.id} is run by another instance; try again`);
  const seq = seqOfId(entryId);
  const valid = entryId.startsWith(`${g.id}.`) && Number.isSafeInteger(seq) && seq > 0 && seq < g.nextSeq;
  const entry = valid ? (entryAt(g.transcript, seq) ?? (await d.store.readEntries(g.id, { afterSeq: seq - 1, limit: 1 }))[0]) : undefined;
  if (!entry || entry.id !== entryId) throw new UserError(`no message "${entryId}" in this group`, 'not_found', 404);
  return { g, entry };
}
