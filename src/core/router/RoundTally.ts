/**
 * What one round did — who answered, reacted, passed or failed, tokens and cost — and the one info line
 * the round logs from it when it ends. Turns add to the tally; the round writes the line.
 */
import type { Logger } from '../ports.js';
import type { GroupDoc, RoundRecord } from '../records.js';
import type { Usage } from '../types.js';

/** What one round did, for its log line. */
export interface RoundTally {
  answered: string[];
  passed: string[];
  /** Agents that reacted to the round's message instead of replying. */
  reacted: string[];
  failed: Array<{ agent: string; reason: string }>;
  tokens: { input: number; output: number; cacheRead: number; cacheWrite: number };
  costUsd: number;
  /** Some turn's model had no known price: the cost is a lower bound. */
  costUnknown: boolean;
}

export function newTally(): RoundTally {
  return { answered: [], passed: [], reacted: [], failed: [], tokens: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, costUsd: 0, costUnknown: false };
}

/** Count one model call's tokens and cost. */
export function countCall(tally: RoundTally, res: { usage: Usage; costUsd?: number | null | undefined }): void {
  tally.tokens.input += res.usage.inputTokens;
  tally.tokens.output += res.usage.outputTokens;
  tally.tokens.cacheRead += res.usage.cacheReadTokens;
  tally.tokens.cacheWrite += res.usage.cacheWriteTokens;
  if (typeof res.costUsd === 'number') tally.costUsd += res.costUsd;
  else tally.costUnknown = true;
}

/**
 * One info line per round: what started it and what came of it. Ids and counts only — never
 * message text or anything secret — so it is safe to ship to any log collector.
 */
export function logRound(logger: Logger, g: GroupDoc, round: RoundRecord, t: RoundTally, ms: number): void {
  const trigger = round.forced ? 'ask' : round.addressed.length > 0 ? 'mention' : 'open';
  const parts = [t.answered.length ? `${t.answered.join(', ')} answered` : 'nobody answered'];
  if (t.reacted.length) parts.push(`${t.reacted.join(', ')} reacted`);
  if (t.passed.length) parts.push(`${t.passed.join(', ')} passed`);
  if (t.failed.length) parts.push(`${t.failed.map((f) => f.agent).join(', ')} failed`);
  logger.info(
    {
      group: g.id,
      channel: g.channel,
      round: round.id,
      trigger,
      messages: round.triggerIds,
      addressed: round.addressed,
      answered: t.answered,
      passed: t.passed,
      ...(t.reacted.length ? { reacted: t.reacted } : {}),
      failed: t.failed,
      latencyMs: Math.round(ms),
      tokens: t.tokens,
      costUsd: t.costUnknown && t.costUsd === 0 ? null : Math.round(t.costUsd * 1e6) / 1e6,
      ...(t.costUnknown ? { costIncomplete: true } : {}),
    },
    `round ${round.id} in ${g.id} (${trigger}): ${parts.join('; ')} in ${(ms / 1000).toFixed(1)} s`,
  );
}
