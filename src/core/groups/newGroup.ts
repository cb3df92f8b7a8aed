/** What a new group is made of: its members checked, its id chosen, its first head. */
import type { GroupHead } from '../records.js';
import type { AgentDef, ChannelKind, GroupConfig } from '../types.js';
import { UserError } from '../errors.js';
import { naturalGroupId } from './groupIds.js';

/** What `GroupManager.create` is asked for. */
export interface NewGroup {
  channel: ChannelKind;
  chatId: string;
  title: string;
  participants: string[];
  id?: string | undefined;
  config?: Partial<GroupConfig> | undefined;
  dmAgentId?: string | undefined;
}

/** The group's members, each once; a UserError for an unknown agent or none at all. */
export function checkedParticipants(input: NewGroup, agents: ReadonlyMap<string, AgentDef>): string[] {
  const participants = [...new Set(input.participants)];
  const unknown = participants.filter((p) => !agents.has(p));
  if (unknown.length) throw new UserError(`unknown agent(s): ${unknown.join(', ')}; known: ${[...agents.keys()].join(', ')}`, 'unknown_agent', 400);
  if (participants.length === 0) throw new UserError('a group needs at least one agent', 'bad_request', 400);
  return participants;
}

/** The id a new group of this chat gets: its natural one, or with `-2`, `-3`… while that is `taken`. */
export function freshGroupId(input: NewGroup, taken: (id: string) => boolean): string {
  const base = naturalGroupId(input.channel, input.dmAgentId ? `${input.chatId}-${input.dmAgentId}` : input.chatId, input.title);
  let id = base;
  // Archived and unreadable ids stay taken: their data keeps the old history.
  for (let n = 2; taken(id); n++) id = `${base.slice(0, 56)}-${n}`;
  return id;
}

/** The first record's description of the group, whole. */
export function firstHead(input: NewGroup, id: string, participants: string[], defaults: GroupConfig, now: number): GroupHead {
  return {
    id,
    title: input.title.trim() || id,
    channel: input.channel,
    chatId: input.chatId || id,
    ...(input.dmAgentId ? { dmAgentId: input.dmAgentId } : {}),
    participants,
    config: { ...defaults, ...input.config },
    createdAt: now,
    state: { muted: [], lastSpoke: {}, sticky: null, rrIndex: 0, archived: false, usage: {} },
  };
}
