/**
 * Folding old history into a running summary (SPEC §5): past `history_turns` messages, the oldest
 * half is summarised by one `summary_model` call and dropped. A failed summary keeps the history
 * (nothing lost) unless it has grown past twice the window, then the oldest turns are cut.
 */
import type { GroupDoc, SessionDoc } from '../ports.js';
import type { AgentDef } from '../types.js';
import { describeError } from '../errors.js';
import { buildSummaryRequest } from './prompt.js';
import type { RoundDeps } from '../router/RoundRunner.js';

export async function maybeSummarize(d: RoundDeps, g: GroupDoc, agent: AgentDef, s: SessionDoc): Promise<void> {
  const limit = g.config.history_turns;
  if (s.history.length <= limit) return;
  // Keep an even number of recent messages so the history still starts with a user turn.
  let keep = Math.floor(limit / 2);
  if (keep % 2 === 1) keep--;
  const fold = s.history.slice(0, s.history.length - keep);
  try {
    const res = await d.gate.call(
      {
        purpose: 'summary',
        model: d.models.summaryModel,
        system: 'You write compact, factual summaries of conversations.',
        messages: [{ role: 'user', content: buildSummaryRequest(agent, s.summary, fold) }],
        maxTokens: 512,
        agent,
        groupId: g.id,
      },
      g.config.agent_reply_timeout_seconds * 1000,
    );
    const text = res.text.trim();
    if (!text) throw new Error('empty summary');
    if (!d.groups.usable(g)) return;
    d.groups.foldHistory(g, s, fold.length, text, res);
    d.groups.addGroupUsage(g, agent.id, res);
  } catch (err) {
    d.logger.warn({ group: g.id, agent: agent.id, err: describeError(err) }, 'summary failed; history kept');
    if (s.history.length > 2 * limit) d.groups.foldHistory(g, s, s.history.length - limit - (limit % 2), s.summary);
  }
  await d.recorder.record(g);
}
