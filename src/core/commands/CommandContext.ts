/** What commands may use, and nothing else: group management, handles, and a way to answer. */
import type { Channel, Logger } from '../ports.js';
import type { GroupDoc } from '../records.js';
import type { AgentDef, ChannelKind, InboundMessage } from '../types.js';
import type { GroupAdmin } from '../groups/GroupAdmin.js';
import type { HandleIndex } from '../router/mentions.js';
import type { Approver } from '../router/Approvals.js';
import type { GroupTask } from '../groups/GroupMailbox.js';

/** The narrow view of the router a command is run with. */
export interface CommandContext {
  agents: readonly AgentDef[];
  agentMap: ReadonlyMap<string, AgentDef>;
  handles: HandleIndex;
  admin: GroupAdmin;
  logger: Logger;
  now(): number;
  channel(kind: ChannelKind): Channel | undefined;
  /** Record `/ask`'s text (if any) and force these agents to answer. */
  ask(g: GroupDoc, msg: InboundMessage, agentIds: string[], text: string | null): Promise<unknown>;
  /** `/stop`: end the group's running and waiting rounds and cancel its model calls (records a notice). */
  /** `seen`: the command's platform message id, remembered with the stop so a redelivery is not a second stop. */
  stop(g: GroupDoc, by: string, seen?: string): Promise<unknown>;
  /** A person approves or denies a waiting tool call (see router/Approvals.ts); records the decision's line. */
  decideTool(g: GroupDoc, id: string, approve: boolean, who: Approver, digest?: string): Promise<unknown>;
  /** Answer in the chat through the system voice (recorded when the chat has a group). */
  reply(msg: InboundMessage, g: GroupDoc | undefined, text: string): Promise<void>;
  /**
   * The task of the group's mailbox the command runs in (a command typed in a chat that has a
   * group): changes to that group run in it, rather than waiting for it to end.
   */
  task?: GroupTask | undefined;
}

