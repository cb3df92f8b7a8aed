/**
 * People approving tool calls. A call that changes things waits, recorded, until a person allowed
 * to decides (`/approve <id>`, `/deny <id>`, the page's buttons, Telegram's inline keyboard) or
 * its deadline passes; meanwhile its turn has stepped aside (see RoundRunner's parking). The
 * decision is recorded before the turn runs again, so a restart never asks twice and never runs a
 * call nobody approved.
 */
import type { Clock } from '../ports.js';
import type { GroupDoc, ToolCallRecord } from '../records.js';
import { UserError } from '../errors.js';
import { callDigest, normalDigest } from '../text/approvalText.js';
import type { GroupManager } from '../groups/GroupManager.js';
import type { Recorder } from './Recorder.js';

/** The person deciding, and whether the channel counts them as an admin of the chat. */
export interface Approver {
  name: string;
  admin: boolean;
}

export class Approvals {
  /** A decision was recorded in `g`: the turn that waits for it can run again. */
  onDecided: (g: GroupDoc) => void = () => undefined;

  constructor(
    private readonly groups: GroupManager,
    private readonly recorder: Recorder,
    private readonly clock: Clock,
  ) {}

  /**
   * A person decides on call `id` of group `g`. Recorded (with a line in the chat saying who
   * decided) before the waiting turn goes on. Throws `UserError` with a reason fit for the chat.
   * `digest`: the digest of the call the person was shown (a button, the page, `/approve <id>
   * <digest>`); a decision naming another one is refused, so it never runs arguments nobody saw.
   * Without one the id alone names the call: ids are never given twice in a group, and a call's
   * arguments never change once recorded.
   */
  async decide(g: GroupDoc, id: string, approve: boolean, who: Approver, digest?: string): Promise<string> {
    const call = recorded(g, id.trim());
    const shown = normalDigest(digest);
    if (call && shown !== undefined && shown !== callDigest(call.server, call.tool, call.input)) {
      const why = `tool call ${call.id} is not the one shown with #${shown}`;
      throw new UserError(`${why}: its arguments differ; read its request again`, 'changed_call', 409);
    }
    // A call whose turn is over is forgotten; its request and step are still in the transcript.
    if (!call && g.transcript.some((e) => e.tool?.id === id.trim())) throw new UserError(`tool call ${id.trim()} no longer waits for a decision`, 'already_decided', 409);
    if (!call) throw new UserError(`there is no tool call "${id}" waiting for approval here`, 'unknown_call', 404);
    if (call.approval !== 'waiting') throw new UserError(`tool call ${call.id} was already ${call.approval === 'none' ? 'allowed without approval' : call.approval}`, 'already_decided', 409);
    if ((call.deadline ?? 0) <= this.clock.now()) throw new UserError(`tool call ${call.id} waited too long and was refused`, 'expired', 409);
    if ((call.approvers ?? 'admins') === 'admins' && !who.admin) throw new UserError(`only chat admins may approve or deny ${call.server}.${call.tool}`, 'not_admin', 403);
    const verdict = approve ? 'approved' : 'denied';
    this.groups.toolChange(g, { t: 'tool', id: call.id, set: { approval: verdict, decidedBy: who.name } });
    const line = `${approve ? '✅' : '⛔'} ${who.name} ${verdict} ${call.server}.${call.tool} (${call.id})`;
    await this.recorder.notice(g, line, { toolDecision: { id: call.id, approved: approve, by: who.name } });
    this.onDecided(g);
    return line;
  }
}

function recorded(g: GroupDoc, id: string): ToolCallRecord | undefined {
  return g.state.tools?.find((c) => c.id === id);
}
