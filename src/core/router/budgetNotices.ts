/**
 * What the chat is told about its group's daily budget (see budget.ts): a refusal once the budget
 * is used up, and a warning once it is nearly used, each at most once per UTC day. A refusal is
 * checked before a round is planned and before each turn's model call; the warning after each step.
 */
import type { GroupDoc, RoundRecord } from '../records.js';
import { budgetLevel, today } from './budget.js';
import type { RoundDeps } from './RoundDeps.js';

type Deps = Pick<RoundDeps, 'clock' | 'groups' | 'recorder'>;

/**
 * The group's daily budget is used up: no model call. Says so in the chat once a day (the
 * notice's record also marks it posted, so a restart does not repeat it).
 */
export async function budgetRefuses(d: Deps, g: GroupDoc, round: RoundRecord): Promise<boolean> {
  const now = d.clock.now();
  const level = budgetLevel(g, now);
  if (!level.over) return false;
  if (!today(g, now).refused) {
    d.groups.markBudgetNotice(g, 'refused');
    d.groups.markBudgetNotice(g, 'warned');
    const text = `⛔ This group's daily budget is used up (${level.parts.join(', ')}): the agents stay silent until 00:00 UTC. Messages are still recorded. An admin can raise it with /group config budget.daily_usd <dollars> or budget.daily_tokens <tokens>.`;
    await d.recorder.notice(g, text, { decision: 'budget', round });
  }
  return true;
}

/** Once a day, at 80% of a limit: a warning in the chat. */
export async function budgetWarning(d: Deps, g: GroupDoc, round: RoundRecord): Promise<void> {
  const now = d.clock.now();
  const level = budgetLevel(g, now);
  if (!level.warn || level.over || today(g, now).warned || !d.groups.usable(g)) return;
  d.groups.markBudgetNotice(g, 'warned');
  await d.recorder.notice(g, `⚠ This group has used ${Math.floor(level.share * 100)}% of its daily budget (${level.parts.join(', ')}); at 100% the agents stop answering until 00:00 UTC.`, { decision: 'budget', round });
}
