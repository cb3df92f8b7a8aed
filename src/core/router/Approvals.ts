/**
 * People approving tool calls. A call that changes things waits in its turn until a person allowed
 * to decides (`/approve <id>`, `/deny <id>`, the page's buttons, Telegram's inline keyboard) or
 * its deadline passes. The decision is recorded before the waiting turn hears of it, so a restart
 * never asks twice and never runs a call nobody approved; a decision made while no turn waits
 * (between a restart and the round resuming) is found in the group's state when it does.
 */
import type { Clock } from '../ports.js';
import type { GroupDoc, ToolCallRecord } from '../records.js';
import { UserError } from '../errors.js';
import type { GroupManager } from '../groups/GroupManager.js';
import type { Recorder } from './Recorder.js';

/** How a wait for a decision ended. `stopped`: `/stop` or shutdown ended it first. */
export type ApprovalVerdict = 'approved' | 'denied' | 'expired' | 'stopped';

/** The person deciding, and whether the channel counts them as an admin of the chat. */
export interface Approver {
  name: string;
  admin: boolean;
}

export class Approvals {
  private readonly waiters = new Map<string, (v: 'approved' | 'denied') => void>();

  constructor(
    private readonly groups: GroupManager,
    private readonly recorder: Recorder,
    private readonly clock: Clock,
  ) {}

  /** Wait for a decision on `call` until its deadline; `signal` (a stop, shutdown) ends the wait. */
  async wait(g: GroupDoc, call: ToolCallRecord, signal: AbortSignal): Promise<ApprovalVerdict> {
    const now = recorded(g, call.id);
    if (now?.approval === 'approved' || now?.approval === 'denied') return now.approval;
    if (now?.approval === 'expired') return 'expired';
    const left = (call.deadline ?? 0) - this.clock.now();
    if (left <= 0) return 'expired';
    if (signal.aborted) return 'stopped';
    const key = keyOf(g.id, call.id);
    const timer = new AbortController();
    return new Promise<ApprovalVerdict>((resolve) => {
      let settled = false;
      const done = (v: ApprovalVerdict) => {
        if (settled) return;
        settled = true;
        this.waiters.delete(key);
        timer.abort();
        resolve(v);
      };
      this.waiters.set(key, done);
      this.clock.sleep(left, AbortSignal.any([signal, timer.signal])).then(
        () => done('expired'),
        () => done(signal.aborted ? 'stopped' : 'expired'),
      );
    });
  }

  /**
   * A person decides on call `id` of group `g`. Recorded (with a line in the chat saying who
   * decided) before the waiting turn goes on. Throws `UserError` with a reason fit for the chat.
   */
  async decide(g: GroupDoc, id: string, approve: boolean, who: Approver): Promise<string> {
    const call = recorded(g, id.trim());
    // A call whose turn is over is forgotten; its request and step are still in the transcript.
    if (!call && g.transcript.some((e) => e.tool?.id === id.trim())) throw new UserError(`tool call ${id.trim()} no longer waits for a decision`, 'already_decided', 409);
    if (!call) throw new UserError(`there is no tool call "${id}" waiting for approval here`, 'unknown_call', 404);
    if (call.approval !== 'waiting') throw new UserError(`tool call ${call.id} was already ${call.approval === 'none' ? 'allowed without approval' : call.approval}`, 'already_decided', 409);
    if ((call.deadline ?? 0) <= this.clock.now()) throw new UserError(`tool call ${call.id} waited too long and was refused`, 'expired', 409);
    if ((call.approvers ?? 'admins') === 'admins' && !who.admin) throw new UserError(`only chat admins may approve or deny ${call.server}.${call.tool}`, 'not_admin', 403);
    const verdict = approve ? 'approved' : 'denied';
    this.groups.toolChange(g, { t: 'tool', id: call.id, set: { approval: verdict, decidedBy: who.name } });
    const line = `${approve ? '✅' : '⛔'} ${who.name} ${verdict} ${call.server}.${call.tool} (${call.id})`;
    const toolDecision = { id: call.id, approved: approve, by: who.name };
    await this.recorder.record(g, { entries: [{ kind: 'system', authorId: 'system', authorName: 'Chorus', text: line, hiddenFromAgents: true, delivery: 'pending', toolDecision }] });
    this.waiters.get(keyOf(g.id, call.id))?.(verdict);
    return line;
  }
}

function recorded(g: GroupDoc, id: string): ToolCallRecord | undefined {
  return g.state.tools?.find((c) => c.id === id);
}

function keyOf(groupId: string, id: string): string {
  return `${groupId}\u0000${id}`;
}
