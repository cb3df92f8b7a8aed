/**
 * How the room changes of a group's log apply (part of `evolve`, groups/evolve.ts): chats joining
 * and leaving, link codes, edits to carry to copies. Pure over the group it is given.
 */
import type { GroupChange, GroupDoc, GroupState } from '../records.js';
import type { TranscriptEntry } from '../types.js';
import { chatKeyOf } from '../roomTypes.js';

type RoomChange = Extract<GroupChange, { t: 'link' | 'unlink' | 'link-code' | 'carry' | 'carried' }>;

export function applyRoomChange(g: GroupDoc, c: RoomChange): void {
  switch (c.t) {
    case 'link':
      g.links = [...(g.links ?? []).filter((l) => l.channel !== c.chat.channel || l.chatId !== c.chat.chatId), { ...c.chat }];
      if (c.code) dropCode(g.state, (k) => k.code === c.code);
      return;
    case 'unlink': {
      const key = chatKeyOf(c);
      const left = (g.links ?? []).filter((l) => chatKeyOf(l) !== key);
      if (left.length) g.links = left;
      else delete g.links;
      // What was still owed there was recorded as failed in the same record (GroupManager.unlink):
      // the entries themselves stay as the stores read them back.
      g.undelivered = g.undelivered.filter(owesPost);
      keepCarry(g.state, (it) => it.chat !== key);
      return;
    }
    case 'link-code':
      dropCode(g.state, (k) => k.until <= c.at);
      g.state.linkCodes = [...(g.state.linkCodes ?? []), { ...c.code }];
      return;
    case 'carry':
      g.state.carry = [...(g.state.carry ?? []), ...structuredClone(c.items)];
      return;
    case 'carried':
      keepCarry(g.state, (it) => !(it.seq === c.seq && it.chat === c.chat && it.at <= c.at));
      return;
  }
}

/** Is a post of this entry still owed: in its home chat, or a copy in another chat of the room? */
export function owesPost(e: TranscriptEntry): boolean {
  if (e.delivery === 'pending') return true;
  for (const k in e.copies) if (e.copies[k]!.delivery === 'pending') return true;
  return false;
}

/** Keep the edits still to carry that pass `keep`; none left: the field goes. */
function keepCarry(s: GroupState, keep: (it: NonNullable<GroupState['carry']>[number]) => boolean): void {
  if (!s.carry) return;
  const left = s.carry.filter(keep);
  if (left.length > 0) s.carry = left;
  else delete s.carry;
}

/** Forget link codes matching `drop`; none left: the field goes. */
function dropCode(s: GroupState, drop: (k: NonNullable<GroupState['linkCodes']>[number]) => boolean): void {
  if (!s.linkCodes) return;
  const left = s.linkCodes.filter((k) => !drop(k));
  if (left.length > 0) s.linkCodes = left;
  else delete s.linkCodes;
}
