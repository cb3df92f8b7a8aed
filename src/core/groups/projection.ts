/**
 * The live events of the page (and of the cluster's relay) that come from a group's records: the
 * one place they are made. GroupManager calls it with each record the moment the record is
 * durable, so nothing is shown that a crash could take back, and every durable entry is shown
 * once. Events that are not records — typing, streamed text — come from the turn as it runs.
 */
import type { GatewayEvent } from '../readModels.js';
import type { GroupDoc, GroupRecord } from '../records.js';
import type { TranscriptEntry } from '../types.js';
import { applyEntryEdit } from './entryEdit.js';

export function eventsOf(g: GroupDoc, rec: GroupRecord): GatewayEvent[] {
  const out: GatewayEvent[] = [];
  for (const entry of rec.entries ?? []) out.push({ type: entry.kind === 'decision' ? 'decision' : 'message', groupId: g.id, entry });
  for (const ed of rec.edits ?? []) {
    // The entry as the edit leaves it (its whole edit state), applied to a blank one.
    const e = { text: '' } as TranscriptEntry;
    applyEntryEdit(e, ed);
    const reactions = e.reactions ?? [];
    const base = { type: 'edited' as const, groupId: g.id, id: `${g.id}.${ed.seq}`, seq: ed.seq, reactions };
    if (ed.deleted) out.push({ ...base, text: '', deleted: true, deletedAt: ed.at });
    else out.push({ ...base, ...(ed.text !== undefined ? { text: ed.text } : {}), ...(e.editedAt !== undefined ? { editedAt: e.editedAt } : {}) });
  }
  for (const c of rec.changes ?? []) {
    switch (c.t) {
      case 'head':
        out.push({ type: 'group', groupId: g.id, action: 'created' });
        break;
      case 'archive':
        out.push({ type: 'group', groupId: g.id, action: 'dissolved' });
        break;
      case 'mute':
      case 'rekey':
      // A chat joined or left the group's room.
      case 'link':
      case 'unlink':
        out.push({ type: 'group', groupId: g.id, action: 'updated' });
        break;
      case 'config':
        out.push({ type: 'config', groupId: g.id, config: { ...g.config } });
        break;
      case 'join':
        out.push({ type: 'member', groupId: g.id, participants: [...g.participants], added: c.agentId });
        break;
      case 'leave':
        out.push({ type: 'member', groupId: g.id, participants: [...g.participants], removed: c.agentId });
        break;
      default:
        // Rounds, sessions, usage, dedupe and the rest are the group's own bookkeeping.
        break;
    }
  }
  return out;
}
