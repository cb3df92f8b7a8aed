/**
 * The workload shared by the crash tests: messages that exercise addressed turns, @all, voluntary
 * rounds and agent-to-agent reactions, and a fake LLM whose every reply text is unique (so a
 * reply recorded twice is visible) and under which an agent never owes two turns at one depth of
 * one round (so `roundId:agentId:depth` names a round turn).
 */
import { randomUUID } from 'node:crypto';
import type { LlmRequest } from '../../src/core/ports.js';
import { FakeLlm } from '../helpers/fake-llm.js';

export const CRASH_GROUPS = ['g0', 'g1', 'g2', 'g3'] as const;

/** Single-line, unique text of message `i`. */
export function crashMessageText(i: number): string {
  switch (i % 5) {
    case 0:
      return `@all status report ${i}`;
    case 1:
      return `@analyst numbers please ${i}`;
    case 2:
      return `anyone around? ${i}`;
    case 3:
      return `@critic and @writer, thoughts ${i}`;
    default:
      return `plain remark ${i}`;
  }
}

function lastUserTurn(req: LlmRequest): string {
  return req.messages.at(-1)?.content ?? '';
}

/**
 * Addressed analyst hands over to @writer (a reaction at depth 1); everyone else answers plainly;
 * voluntary turns answer for about a third of the messages, else pass.
 */
export function crashReply(req: LlmRequest): string {
  return replyFor(req.agent?.id ?? '?', lastUserTurn(req), req.mustReply === true);
}

/** The same decision from what a wire-level fake sees: agent id, last user turn, must it reply. */
export function replyFor(id: string, turn: string, mustReply: boolean): string {
  const tag = randomUUID().slice(0, 8);
  if (!mustReply) {
    let h = 0;
    for (const c of turn + id) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    return h % 3 === 0 ? `${id} chimes in ${tag}` : '[PASS]';
  }
  if (id === 'analyst' && turn.includes('You were addressed directly')) return `analyst figures ${tag}; @writer can you phrase it?`;
  return `${id} answers ${tag}`;
}

export function crashWorkloadLlm(latencyMs: number): FakeLlm {
  return new FakeLlm({ fallback: (req) => crashReply(req), latencyMs });
}
