/**
 * What an agent sees (SPEC §5). The system prompt is the persona plus a group section that only
 * changes when the group's title or membership changes, so prompt caching keeps working; all
 * per-turn material (observations, the ask) goes in the user turn.
 */
import type { AgentDef, TranscriptEntry } from '../types.js';

export const PASS_TOKEN = '[PASS]';

/** Inputs for the stable system prefix. */
export interface GroupContext {
  title: string;
  participants: readonly AgentDef[];
  /** Handles per agent id, `@`-prefixed. */
  handles: (agentId: string) => string[];
}

/** Persona + group section. Identical across turns while membership is unchanged. */
export function buildSystemPrompt(agent: AgentDef, group: GroupContext): string {
  const persona = agent.persona.trim();
  const others = group.participants.filter((p) => p.id !== agent.id);
  if (others.length === 0) {
    return `${persona}\n\n## Conversation\nYou are ${agent.name}, talking one-on-one with a person in "${group.title}". Always answer them directly.`;
  }
  const lines = others.map((o) => `- ${o.name} (@${o.id}): ${firstLine(o.persona)}`);
  return [
    persona,
    '',
    `## Group chat: ${group.title}`,
    `You are ${agent.name} (@${agent.id}), one of several AI participants in a group chat with people.`,
    'Other participants:',
    ...lines,
    '',
    'Messages from others reach you as "[Name] text" lines; humans are marked "(human)".',
    'To address someone, write their handle, e.g. @' + (others[0]?.id ?? 'name') + '. Only address another participant when you need them.',
    'Write only your own message: no name label, no "[Name]" prefix.',
    `If you have nothing meaningful to add, reply with exactly ${PASS_TOKEN}; it will not be shown.`,
  ].join('\n');
}

/** How one transcript entry reads in a mailbox. */
export function observationLine(e: TranscriptEntry): string {
  const who = e.kind === 'human' ? `${e.authorName} (human)` : e.kind === 'system' ? 'System' : e.authorName;
  return `[${who}] ${e.text}`;
}

/** Why the agent is being asked, which decides the closing instruction. */
export type Ask =
  | { kind: 'addressed' }
  | { kind: 'voluntary' }
  | { kind: 'reaction'; by: string }
  /** `text` is set when the message is not in the mailbox (the agent saw it in an earlier turn). */
  | { kind: 'forced'; lastHuman: { name: string; text: string | null } | null }
  | { kind: 'direct' };

/** The user turn: drained mailbox, then the ask. */
export function buildUserTurn(observations: readonly TranscriptEntry[], ask: Ask, omitted = 0): string {
  const lines = observations.map(observationLine);
  // After a long silence not everything fits: say so rather than leave a silent gap.
  if (omitted > 0) lines.unshift(`(${omitted} earlier message${omitted === 1 ? '' : 's'} not shown)`);
  const body = lines.length > 0 ? lines.join('\n') : '(nothing new since your last turn)';
  if (ask.kind === 'direct') return observations.length > 0 ? observations.map((o) => o.text).join('\n\n') : '(continue)';
  const instruction =
    ask.kind === 'addressed'
      ? 'You were addressed directly: reply.'
      : ask.kind === 'reaction'
        ? `${ask.by} addressed you: reply.`
        : ask.kind === 'forced'
          ? ask.lastHuman
            ? `You were asked to answer the last message from ${ask.lastHuman.name}: reply.${ask.lastHuman.text !== null ? `\n[${ask.lastHuman.name} (human)] ${ask.lastHuman.text}` : ''}`
            : 'You were asked to speak: reply.'
          : `Reply only if you can add something; otherwise reply with exactly ${PASS_TOKEN}.`;
  return `## Group conversation since your last turn\n${body}\n\n## Your turn\n${instruction}`;
}

/** The request that folds old turns into the running summary. */
export function buildSummaryRequest(agent: AgentDef, previous: string | null, turns: ReadonlyArray<{ role: string; content: string }>): string {
  const text = turns.map((t) => `${t.role === 'assistant' ? agent.name : 'Group'}: ${t.content}`).join('\n\n');
  return [
    `Summarise the conversation below from ${agent.name}'s point of view in at most 200 words.`,
    'Keep names, decisions, numbers and open questions. Write plain prose.',
    previous ? `\nEarlier summary:\n${previous}` : '',
    `\nConversation:\n${text}`,
  ].join('\n');
}

function firstLine(s: string): string {
  const line = s.trim().split('\n')[0] ?? '';
  return line.length > 140 ? line.slice(0, 137) + '…' : line;
}
