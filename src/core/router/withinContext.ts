/**
 * Fitting a turn's prompt to the model's context window (see session/contextBudget) around its
 * model call, and learning from the provider when the window was smaller than assumed.
 */
import type { GroupDoc } from '../records.js';
import type { AgentDef, Usage } from '../types.js';
import { LlmError } from '../errors.js';
import type { ContextBudgets, FittedPrompt, PromptParts } from '../session/contextBudget.js';
import type { RoundDeps } from './RoundDeps.js';

/**
 * Send the turn's prompt fitted to the model's context window. When the provider still answers
 * "too long" (its window is smaller than assumed, or the estimate was off), learn from the answer
 * — the window it reported, its token count — fit again, smaller, and retry once; a second
 * "too long" goes to the caller as the turn's failure, and what was learned makes the next turn fit.
 */
export async function withinContext<T extends { usage: Usage }>(d: Pick<RoundDeps, 'models' | 'logger'>, budgets: ContextBudgets, g: GroupDoc, agent: AgentDef, model: string, parts: PromptParts, send: (p: FittedPrompt) => Promise<T>): Promise<T> {
  const maxTokens = d.models.maxTokens;
  let p = budgets.fit(model, agent, maxTokens, parts);
  for (let attempt = 0; ; attempt++) {
    if (p.folded + parts.omitted > 0 || p.droppedHistory > 0 || p.cutObservation) {
      d.logger.debug({ group: g.id, agent: agent.id, model, budget: p.budgetTokens, estimated: p.estimatedTokens, shown: p.shown, folded: p.folded, omitted: parts.omitted, historyLeftOut: p.droppedHistory, cut: p.cutObservation }, 'prompt fitted to the context window');
    }
    try {
      const res = await send(p);
      budgets.learn(model, p, res.usage);
      return res;
    } catch (err) {
      if (!(err instanceof LlmError) || err.code !== 'context_too_long') throw err;
      const reported = err as LlmError & { limit?: number; promptTokens?: number };
      const window = budgets.window(model, agent);
      budgets.overflow(model, agent, reported, p);
      const next = budgets.fit(model, agent, maxTokens, parts);
      d.logger.warn(
        { group: g.id, agent: agent.id, model, assumedWindow: window, reportedWindow: reported.limit ?? null, promptTokens: reported.promptTokens ?? null, estimated: p.estimatedTokens, nextWindow: budgets.window(model, agent), retry: attempt === 0 },
        attempt === 0 ? 'prompt too long for the model: shrinking and retrying once' : 'prompt too long for the model again after shrinking; the next turn is fitted smaller',
      );
      if (attempt >= 1) throw err;
      p = next;
    }
  }
}
