/**
 * The built-in demo's model: what answers when Chorus runs with no key (the built-in config, or a
 * web-only one whose Anthropic key is unset). It builds on the scripted provider and shows what a
 * group of agents with a real model would do, still canned and still saying so ("(demo)"):
 *
 * - A question or a greeting to the room ("hey everyone, thoughts?") is answered by every agent it
 *   is offered to (the group's caps decide how many get the turn), each in its persona's voice
 *   with one of several replies picked by a seeded hash (demoReplies.ts); one agent per message,
 *   also picked by the hash, may react with an emoji instead where the turn offers reacting.
 * - Replies stream word by word at a human pace (timers that end at the request's abort signal),
 *   so the page shows them being written. They run to three sentences: the router holds back
 *   the first 120 characters of a voluntary reply (until it can no longer turn out to be a pass),
 *   and a one-line reply would then appear all at once.
 * - An agent offered a notes tool (the demo's MCP server, src/demo/notesServer.ts) answers "note
 *   that …" / "remember …" with a call to add it and "what notes do we have?" with a call to list
 *   them, then words the tool's result as its reply. Tools are offered to addressed turns only, so
 *   on a voluntary turn the agent that keeps the notes says how to ask it, and the others pass.
 *
 * Everything else (summaries, the selector, files, plain statements, news and thanks) is the
 * scripted provider's answer, streamed the same way. `llm.provider: scripted` keeps the plain
 * scripted provider: tests and benches rely on its instant, fixed replies.
 */
import { LlmError } from '../core/errors.js';
import type { LlmProvider, LlmRequest, LlmResponse } from '../core/ports.js';
import type { AgentDef } from '../core/types.js';
import type { ToolCall, ToolSpec } from '../core/toolTypes.js';
import { demoReply, DEMO_MARK, previousSpeaker, seeded, subjectOf } from './demoReplies.js';
import {
  escape,
  lastHumanLine,
  opensConversation,
  roleOf,
  ScriptedProvider,
  withoutFileLines,
} from './ScriptedProvider.js';

export interface DemoOptions {
  /** Pause before each streamed word (default 45 ms); 0 streams without waiting. */
  wordDelayMs?: number | undefined;
  /** Pause before the first word, as a model takes a moment to start (default 400 ms). */
  thinkMs?: number | undefined;
}

/** What the demo decided to say, before it is streamed. */
interface Said {
  text: string;
  toolCalls?: ToolCall[] | undefined;
}

const NO_USAGE = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };

export class DemoProvider implements LlmProvider {
  /** The page's demo note and the context budget go by this name; it is the scripted provider's. */
  readonly name = 'scripted';
  private readonly canned = new ScriptedProvider();
  private readonly wordDelayMs: number;
  private readonly thinkMs: number;

  constructor(opts: DemoOptions = {}) {
    this.wordDelayMs = opts.wordDelayMs ?? 45;
    this.thinkMs = opts.thinkMs ?? 400;
  }

  async complete(req: LlmRequest): Promise<LlmResponse> {
    const said = demoTurn(req) ?? { text: (await this.canned.complete({ ...req, onDelta: undefined })).text };
    await this.pause(this.thinkMs, req);
    // A step that calls a tool says little and shows nothing while it is made: the tool card is
    // what the room sees next. Pass, reactions and replies stream like a model's output.
    if (said.toolCalls?.length) req.onActivity?.();
    else await this.stream(said.text, req);
    const calls = said.toolCalls ? { toolCalls: said.toolCalls } : {};
    return { text: said.text, model: 'scripted', usage: NO_USAGE, costUsd: 0, ...calls };
  }

  private async stream(text: string, req: LlmRequest): Promise<void> {
    const words = text.match(/\S+\s*/g) ?? [];
    for (let i = 0; i < words.length; i++) {
      if (i > 0) await this.pause(this.wordDelayMs, req);
      req.onActivity?.();
      req.onDelta?.(words[i]!);
    }
  }

  /** Wait `ms`, ending early (with the signal's reason) when the request is aborted. */
  private pause(ms: number, req: LlmRequest): Promise<void> {
    const signal = req.signal;
    if (signal?.aborted) return Promise.reject(stopped(signal));
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        clearTimeout(timer);
        reject(stopped(signal!));
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

function stopped(signal: AbortSignal): unknown {
  return signal.reason ?? new LlmError('demo reply stopped', 'aborted', true);
}

/**
 * The demo's own answer to a turn, or null where the scripted provider's is the answer (see the
 * top of this file).
 */
export function demoTurn(req: LlmRequest): Said | null {
  const agent = req.agent;
  if (req.purpose !== 'turn' || !agent) return null;
  if (req.toolSteps?.length) return { text: afterTool(req) };
  const turn = req.messages.at(-1)?.content ?? '';
  const named = lastHumanLine(turn);
  const topic = withoutFileLines(named);
  // Files are the scripted provider's to describe.
  if (topic !== named || req.messages.at(-1)?.attachments?.length) return null;
  const plain = topic.replace(/^(?:@[\p{L}\p{N}_-]+[\s,:]*)+/u, '').replace(/(^|\s)@(?=[\p{L}\p{N}_])/gu, '$1').trim();
  const intent = notesIntent(plain);
  if (intent) return notesTurn(req, agent, intent);
  const reply = (): Said => ({ text: demoReply(contextOf(agent, plain, topic, turn)) });
  if (req.mustReply) return reply();
  if (touches(agent, topic)) return reply();
  if (!opensConversation(topic)) return null;
  // A question or greeting to someone else by handle is theirs to answer.
  if (/(^|\s)@[\p{L}\p{N}_]/u.test(topic)) return { text: '[PASS]' };
  if (req.mayReact && reactorOf(agent.id, req.system, topic) === agent.id) {
    return { text: `[REACT ${['👍', '🔥', '👏', '🤔'][seeded(`emoji\n${agent.id}\n${topic}`) % 4]!}]` };
  }
  return reply();
}

function contextOf(agent: AgentDef, plain: string, topic: string, turn: string) {
  return {
    agentId: agent.id,
    name: agent.name,
    role: roleOf(agent.persona, agent.name) ?? `the group's ${agent.name.toLowerCase()}`,
    persona: agent.persona,
    subject: subjectOf(plain),
    after: previousSpeaker(turn, agent.name),
    seed: topic,
  };
}

/** Whether the message names the agent: its handle, name or an alias. */
function touches(agent: AgentDef, topic: string): boolean {
  const words = [agent.id, agent.name, ...agent.aliases].map((w) => w.replace(/^@/, '').toLowerCase());
  const hay = topic.toLowerCase();
  return words.some((w) => new RegExp(`(^|[^\\p{L}\\p{N}])${escape(w)}([^\\p{L}\\p{N}]|$)`, 'u').test(hay));
}

/**
 * The one agent (by handle) that reacts rather than replies to this message, or none: picked by
 * the hash among the group's members and "nobody", so most messages get one reaction at most and
 * the others' replies, and some get replies only.
 */
function reactorOf(self: string, system: string, topic: string): string | undefined {
  const others = [...system.matchAll(/^- [^\n]*?\(@([\p{L}\p{N}_-]+)\):/gmu)].map((m) => m[1]!);
  const ids = [...new Set([self, ...others])].sort((a, b) => a.localeCompare(b));
  // A one-to-one chat has nobody else to answer: its only agent never just reacts.
  if (ids.length < 2) return undefined;
  return ids[seeded(`react\n${topic}`) % (ids.length + 1)];
}

type NotesIntent = { kind: 'add'; text: string } | { kind: 'list' };

const ADD = new RegExp(
  [
    String.raw`^(?:please\s+)?(?:(?:can|could|would) you\s+)?(?:please\s+)?`,
    String.raw`(?:note(?: down)?|remember|jot down|write down|make a note|take a note|add a note)\b`,
    String.raw`(?:\s+(?:that|of))?[\s:,-]*(.+?)[\s.!]*$`,
  ].join(''),
  'iu',
);
const LIST = new RegExp(
  [
    String.raw`\b(?:what|which|any|show|list|read)`,
    String.raw`(?:\s+(?:me|us|are|is|the|our|all|of|do|we|have|been))*\s+notes?\b|^notes\??$`,
  ].join(''),
  'iu',
);

/** "note that …" / "remember …" asks to add a note; "what notes do we have?" to list them. */
export function notesIntent(plain: string): NotesIntent | null {
  // "remember when we shipped it?" asks something; it is not a note.
  const add = /\?\s*$/.test(plain) ? null : ADD.exec(plain);
  if (add && add[1]!.trim()) return { kind: 'add', text: add[1]!.trim() };
  if (LIST.test(plain)) return { kind: 'list' };
  return null;
}

/** The notes tool of this kind among the ones offered (`notes__add`, `notes__list`). */
function notesTool(tools: readonly ToolSpec[] | undefined, kind: NotesIntent['kind']): ToolSpec | undefined {
  return tools?.find((t) => /note/i.test(t.name) && new RegExp(`(^|_)${kind}$`).test(t.name));
}

/** Whether the agent keeps notes (the config gives it a notes server), offered this turn or not. */
function keepsNotes(agent: AgentDef): boolean {
  return (agent.tools ?? []).some((t) => /note/i.test(t));
}

function notesTurn(req: LlmRequest, agent: AgentDef, intent: NotesIntent): Said {
  const tool = req.toolChoice === 'none' ? undefined : notesTool(req.tools, intent.kind);
  if (tool) {
    const input = intent.kind === 'add' ? { text: intent.text } : {};
    const id = `demo_${seeded(`${agent.id}\n${tool.name}\n${JSON.stringify(input)}`).toString(36)}`;
    const text = intent.kind === 'add' ? 'Adding that to our notes.' : 'Checking our notes.';
    return { text, toolCalls: [{ id, name: tool.name, input }] };
  }
  if (!req.mustReply) {
    if (!keepsNotes(agent)) return { text: '[PASS]' };
    const ask = intent.kind === 'add' ? `@${agent.id} note that …` : `@${agent.id} what notes do we have?`;
    const how = `Ask me by name, “${ask}”, and I'll use the notes tool: tools run when someone asks an agent.`;
    return { text: `I keep our notes. ${how} ${DEMO_MARK}` };
  }
  // Asked by name, and still no tool: its server is down (or starting), or this turn may not call more.
  if (keepsNotes(agent)) {
    return { text: `My notes tool is not available right now, so nothing was written or read. ${DEMO_MARK}` };
  }
  return { text: `I don't keep the notes here; ask the agent who does. ${DEMO_MARK}` };
}

/** The reply once the turn's tool calls have their results: what came back, in the agent's words. */
function afterTool(req: LlmRequest): string {
  const step = req.toolSteps!.at(-1)!;
  const call = step.calls.at(-1);
  const result = step.results.find((r) => r.callId === call?.id) ?? step.results.at(-1);
  const content = (result?.content ?? '').trim();
  if (!result || result.isError) {
    return `That didn't go through, so the notes are as they were: ${content || 'no result'} ${DEMO_MARK}`;
  }
  if (call && /(^|_)list$/.test(call.name)) {
    if (content === 'No notes yet.') return `No notes yet. Say “note that …” to start them. ${DEMO_MARK}`;
    return `Here's what we have:\n${content}\n\n${DEMO_MARK}`;
  }
  if (call && /(^|_)add$/.test(call.name)) {
    const text = typeof call.input.text === 'string' ? call.input.text : content;
    return `Done, it's in our notes: “${text}”. Ask “what notes do we have?” any time. ${DEMO_MARK}`;
  }
  return `The tool answered: ${content.slice(0, 300)} ${DEMO_MARK}`;
}
