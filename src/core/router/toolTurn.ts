/**
 * A turn with tools: the model answers, or asks for tool calls; each call is recorded before it
 * runs and its result after, and goes back to the model as a tool result; the loop ends at a reply
 * or at `max_tool_steps` (then the model must answer without tools).
 *
 * Never twice. A call's record says whether it needed a person (and what they decided) and
 * whether it began. The steps of a turn are rebuilt from those records every time the loop starts,
 * so a turn resumed after a crash goes on where the log left it: a call that began and has no
 * result is not run again — unless the tool says it only reads or is idempotent, and then only
 * once more — and the model is told its outcome is unknown.
 */
import type { Attachment } from '../fileTypes.js';
import type { LlmResponse } from '../ports.js';
import type { ToolHost, ToolInfo } from '../toolPorts.js';
import type { GroupDoc, RoundRecord, ToolCallRecord } from '../records.js';
import type { AgentDef, Usage } from '../types.js';
import type { ToolCall, ToolOutcome, ToolSpec, ToolStep, ToolStepView } from '../toolTypes.js';
import { neutralizeToolText } from '../session/toolSafety.js';
import { callDigest } from '../text/approvalText.js';
import { cutWithMarker, stepLine } from '../text/toolText.js';
import { utf8Length } from '../text/utf8.js';
import type { RoundDeps } from './RoundDeps.js';

/** The tool host when no MCP servers are configured: no agent has tools. */
export const noTools: ToolHost = {
  toolsFor: () => [],
  call: async ({ server }) => {
    const content = `no MCP server "${server}" is configured under tools:`;
    return { outcome: 'unavailable', content, bytes: content.length };
  },
};

/** One model call of the loop, with what the loop adds to the request. */
export type StepCall = (extra: { tools: readonly ToolSpec[]; toolChoice: 'auto' | 'none'; toolSteps: ToolStep[] }) => Promise<LlmResponse & { latencyMs: number }>;

/** The turn's answer and what its tool steps cost before it (already counted for the group). */
export interface ToolTurnResult {
  res: LlmResponse & { latencyMs: number };
  /** Usage of the first call, whose prompt is the fitted one (context calibration learns from it). */
  first: Usage;
  stepUsage: Usage;
  stepCostUsd: number | null;
  /** Files the turn's tools returned, in order: posted with the reply under the agent's identity. */
  attachments: Attachment[];
}

/** A turn's identity and where its steps are shown. */
export interface ToolTurnScope {
  g: GroupDoc;
  round: RoundRecord;
  agent: AgentDef;
  turn: string;
  threadId: string | undefined;
  tools: readonly ToolInfo[];
  /** Participants' names: labels of theirs in a tool's answer are neutralised. */
  names: readonly string[];
  /** `/stop`: ends a wait for approval and cancels a running call. */
  stop: AbortSignal;
  /** Trim steps so they fit what is left of the context window (see TurnRunner). */
  fit: (steps: ToolStep[]) => ToolStep[];
  /** The agent's typing indicator: off while a person is asked, on again when its model works. */
  typing: (on: boolean) => void;
}

/**
 * Thrown out of a turn whose tool call waits for a person: the turn is not dropped (it runs again
 * from its recorded steps), and its round steps aside until `deadline` or a decision.
 */
export class AwaitingApproval extends Error {
  override readonly name = 'AwaitingApproval';
  constructor(
    readonly callId: string,
    readonly deadline: number,
  ) {
    super(`tool call ${callId} waits for approval`);
  }
}

const NOT_RUN_AGAIN =
  'The call was interrupted: Chorus stopped while it ran, so whether it took effect is unknown. It was not run again, because running it twice could do its change twice. Tell the people in the room, and do not assume either outcome.';

export class ToolTurn {
  constructor(private readonly d: RoundDeps) {}

  /** Run the loop: model, tools, model, … until an answer. */
  async run(s: ToolTurnScope, call: StepCall): Promise<ToolTurnResult> {
    const specs = s.tools.map(({ name, description, inputSchema }) => ({ name, description, inputSchema }));
    let first: Usage | undefined;
    let stepUsage: Usage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
    let stepCostUsd: number | null = 0;
    for (;;) {
      // Calls a crash or a stop left without a result come first (resumed turns).
      for (const c of this.calls(s)) if (!c.result) await this.settle(s, c);
      const done = stepsOf(this.calls(s));
      const choice = done.length >= s.g.config.max_tool_steps ? 'none' : 'auto';
      const res = await call({ tools: specs, toolChoice: choice, toolSteps: s.fit(done) });
      first ??= res.usage;
      if (choice === 'none' || !res.toolCalls?.length) return { res, first, stepUsage, stepCostUsd, attachments: this.calls(s).flatMap((c) => c.result?.attachments ?? []) };
      // A step, not the answer: its cost is counted now, with its calls' record.
      stepUsage = addUsage(stepUsage, res.usage);
      stepCostUsd = stepCostUsd === null || res.costUsd == null ? null : stepCostUsd + res.costUsd;
      this.d.groups.addGroupUsage(s.g, s.agent.id, res);
      // Every call of the step is recorded before the first runs: one waiting for a person, or a
      // crash, leaves the others recorded too, and the resumed turn settles them in order.
      const index = done.length;
      const recs = res.toolCalls.map((tc) => this.record(s, index, res.text, tc));
      for (const rec of recs) await this.settle(s, rec);
    }
  }

  /** The turn's recorded calls, in order. */
  private calls(s: ToolTurnScope): ToolCallRecord[] {
    return (s.g.state.tools ?? []).filter((c) => c.turn === s.turn);
  }

  /** Record one call the model asked for (written with the next commit, before it runs). */
  private record(s: ToolTurnScope, step: number, stepText: string, tc: ToolCall): ToolCallRecord {
    const info = s.tools.find((t) => t.name === tc.name);
    const needs = !!info && (info.confirm === 'always' || (info.confirm === 'auto' && !info.readOnly));
    const now = this.d.clock.now();
    const rec: ToolCallRecord = {
      id: this.freshId(s.g),
      turn: s.turn,
      roundId: s.round.id,
      agentId: s.agent.id,
      step,
      stepText,
      callId: tc.id,
      name: tc.name,
      server: info?.server ?? '(none)',
      tool: info?.tool ?? tc.name,
      input: tc.input,
      readOnly: info?.readOnly ?? true,
      idempotent: info?.idempotent ?? true,
      approval: needs ? 'waiting' : 'none',
      ...(needs ? { approvers: info.approvers, deadline: now + s.g.config.tool_approval_timeout_seconds * 1000 } : {}),
      started: 0,
      at: now,
      ...(info ? {} : { result: { outcome: 'error' as const, content: `There is no tool named "${tc.name}" available to you.`, bytes: 0 } }),
    };
    this.d.groups.toolChange(s.g, { t: 'tool-call', call: rec });
    return rec;
  }

  /** Bring one recorded call to a result: ask a person if needed, run it (once), record the outcome. */
  private async settle(s: ToolTurnScope, rec: ToolCallRecord): Promise<void> {
    const { groups } = this.d;
    let c = current(s.g, rec.id) ?? rec;
    if (c.result) {
      // Settled when recorded (a tool the agent does not have): only the room is told.
      return this.show(s, c, c.result.outcome, c.result.content, c.result.bytes);
    }
    if (c.approval === 'waiting') {
      await this.ask(s, c);
      // Nobody has decided yet: the turn steps aside (its round waits, the group's other rounds
      // go on) and is run again once someone decides or the deadline passes.
      if ((c.deadline ?? 0) > this.d.clock.now()) throw new AwaitingApproval(c.id, c.deadline ?? 0);
      groups.toolChange(s.g, { t: 'tool', id: c.id, set: { approval: 'expired' } });
      c = current(s.g, rec.id) ?? c;
    }
    if (c.approval === 'denied' || c.approval === 'expired') {
      const why = c.approval === 'denied' ? `${c.decidedBy ?? 'A person'} did not approve this call; it was not run.` : 'Nobody approved this call in time; it was not run.';
      return this.finish(s, c, 'denied', why, 0);
    }
    if (c.started >= 1) {
      // It began before a crash and has no result.
      if (!(c.readOnly || c.idempotent) || c.started >= 2) return this.finish(s, c, 'interrupted', NOT_RUN_AGAIN, 0);
    }
    groups.toolChange(s.g, { t: 'tool', id: c.id, set: { started: c.started + 1 } });
    // Recorded before it runs: a crash from here on leaves a call that began.
    await groups.commit(s.g).durable;
    // The tool host counts and times calls for `/metrics`.
    const halt = AbortSignal.any([s.stop, this.d.shutdown]);
    // A tool may take minutes: the group takes in messages and stops meanwhile.
    const out = await this.d.mailbox.outside(s.g.id, () => this.d.tools.call({ server: c.server, tool: c.tool, input: c.input, timeoutMs: s.g.config.tool_timeout_seconds * 1000, signal: halt }));
    const content = out.outcome === 'cancelled' && this.d.shutdown.aborted ? 'The call was cancelled because Chorus was shutting down; whether it took effect is unknown.' : out.content;
    await this.finish(s, c, out.outcome, content, out.bytes, out.attachments);
  }

  /** Post the request for approval, once: the flag saying so is in the same record as the request. */
  private async ask(s: ToolTurnScope, c: ToolCallRecord): Promise<void> {
    if (c.asked) return;
    this.d.groups.toolChange(s.g, { t: 'tool', id: c.id, set: { asked: true } });
    s.typing(false);
    await this.d.recorder.record(s.g, { entries: [this.entry(s, this.view(c, 'waiting', '', 0), true)] });
  }

  /** The call's result: recorded, and shown to the room as one step of the transcript. */
  private async finish(s: ToolTurnScope, c: ToolCallRecord, outcome: ToolOutcome, raw: string, bytes: number, attachments?: Attachment[]): Promise<void> {
    const content = neutralizeToolText(raw, s.names);
    const files = attachments?.length ? { attachments } : {};
    this.d.groups.toolChange(s.g, { t: 'tool', id: c.id, set: { result: { outcome, content, bytes, ...files } } });
    await this.show(s, c, outcome, content, bytes);
  }

  private async show(s: ToolTurnScope, c: ToolCallRecord, outcome: ToolOutcome, content: string, bytes: number): Promise<void> {
    await this.d.recorder.record(s.g, { entries: [this.entry(s, this.view(c, outcome, content, bytes), false)] });
  }

  private view(c: ToolCallRecord, outcome: ToolStepView['outcome'], content: string, bytes: number): ToolStepView {
    let input: Record<string, unknown>;
    try {
      input = JSON.parse(this.d.redact(JSON.stringify(c.input))) as Record<string, unknown>;
    } catch {
      input = { redacted: this.d.redact(JSON.stringify(c.input)) };
    }
    // A request carries the digest of the call itself (not of the redacted view): a decision that
    // names it approves exactly these arguments.
    const digest = callDigest(c.server, c.tool, c.input);
    const asked = outcome === 'waiting' ? { ...(c.deadline ? { deadline: c.deadline } : {}), digest } : {};
    return { id: c.id, server: c.server, tool: c.tool, input, outcome, result: this.d.redact(content), resultBytes: bytes || utf8Length(content), ...(c.decidedBy ? { decidedBy: c.decidedBy } : {}), ...asked };
  }

  private entry(s: ToolTurnScope, view: ToolStepView, request: boolean) {
    return {
      kind: 'tool' as const,
      authorId: `agent:${s.agent.id}`,
      authorName: s.agent.name,
      agentId: s.agent.id,
      text: stepLine(s.agent.name, view),
      tool: view,
      roundId: s.round.id,
      threadId: s.threadId,
      delivery: 'pending' as const,
      // Others observe what a call did, not that one was asked for.
      ...(request ? { hiddenFromAgents: true } : {}),
    };
  }

  /** A short id people can type, unique in the group: `t` and the seq the group is at. */
  private freshId(g: GroupDoc): string {
    const taken = new Set((g.state.tools ?? []).map((c) => c.id));
    let id = `t${g.nextSeq}`;
    for (let k = 2; taken.has(id); k++) id = `t${g.nextSeq}-${k}`;
    return id;
  }
}

function current(g: GroupDoc, id: string): ToolCallRecord | undefined {
  return g.state.tools?.find((c) => c.id === id);
}

/** The turn's finished steps as the model is sent them, in order. */
function stepsOf(calls: readonly ToolCallRecord[]): ToolStep[] {
  const steps: ToolStep[] = [];
  for (const c of calls) {
    if (!c.result) continue;
    let step = steps[c.step];
    if (!step) steps[c.step] = step = { text: c.stepText, calls: [], results: [] };
    step.calls.push({ id: c.callId, name: c.name, input: c.input });
    step.results.push({ callId: c.callId, content: c.result.content, isError: c.result.outcome !== 'ok' });
  }
  return steps.filter((x): x is ToolStep => !!x);
}

export function addUsage(a: Usage, b: Usage): Usage {
  return { inputTokens: a.inputTokens + b.inputTokens, outputTokens: a.outputTokens + b.outputTokens, cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens, cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens };
}

/**
 * Shrink the longest results of `steps` until `tokens(steps)` is at most `room`. Each cut is made
 * from the whole result (one marker, naming its whole size); no result is cut below 256 bytes.
 */
export function fitSteps(steps: ToolStep[], room: number, tokens: (text: string) => number): ToolStep[] {
  const size = (xs: ToolStep[]) => xs.reduce((n, st) => n + tokens(st.text) + st.calls.reduce((m, c) => m + tokens(JSON.stringify(c.input)), 0) + st.results.reduce((m, r) => m + tokens(r.content), 0), 0);
  /** `step:result` → bytes it is cut to. */
  const cuts = new Map<string, number>();
  const shaped = () => (cuts.size === 0 ? steps : steps.map((st, i) => ({ ...st, results: st.results.map((r, j) => (cuts.has(`${i}:${j}`) ? { ...r, content: cutWithMarker(r.content, cuts.get(`${i}:${j}`)!, 'cut to fit the context window') } : r)) })));
  let out = steps;
  for (let guard = 0; guard < 64 && size(out) > room; guard++) {
    let longest: { key: string; bytes: number } | null = null;
    steps.forEach((st, i) =>
      st.results.forEach((r, j) => {
        const key = `${i}:${j}`;
        const bytes = cuts.get(key) ?? utf8Length(r.content);
        if (!longest || bytes > longest.bytes) longest = { key, bytes };
      }),
    );
    const l = longest as { key: string; bytes: number } | null;
    if (!l || l.bytes <= 512) break;
    cuts.set(l.key, Math.max(256, Math.floor(l.bytes / 2)));
    out = shaped();
  }
  return out;
}
