/**
 * A group's daily budget (group config `budget: { daily_usd, daily_tokens }`, UTC day). The day's
 * usage lives in the group's state (`state.today`, changed by `evolve`), so it is written with the record of the call
 * that used it and survives restarts; a new UTC day starts from zero.
 *
 * The budget is checked before each model call of the group: a call already under way when the
 * limit is crossed still finishes (its cost is counted), so a day can end slightly over the limit.
 * Tokens are everything a call processed: input, output, cache reads and cache writes.
 */
import type { DayUsage, GroupDoc } from '../records.js';
import { dayUsage } from '../groups/evolve.js';

/** The chat is warned once a day when usage reaches this share of a limit. */
const WARN_AT = 0.8;

/** Today's usage of the group (a fresh, zero day when the stored one is from an earlier day). */
export function today(g: GroupDoc, now: number): DayUsage {
  return dayUsage(g, now);
}

export interface BudgetLevel {
  /** The largest share of a limit used (0 with no limits). */
  share: number;
  /** A limit is reached: no more model calls today. */
  over: boolean;
  /** At or past WARN_AT of a limit. */
  warn: boolean;
  /** "$4.10 of $5.00" / "812k of 1M tokens" for each set limit. */
  parts: string[];
}

/** Where the group stands against its budget today. */
export function budgetLevel(g: GroupDoc, now: number): BudgetLevel {
  const b = g.config.budget;
  const t = today(g, now);
  let share = 0;
  const parts: string[] = [];
  if (b?.daily_usd) {
    share = Math.max(share, t.costUsd / b.daily_usd);
    parts.push(`$${t.costUsd.toFixed(2)}${t.costUnknown ? '+' : ''} of $${b.daily_usd.toFixed(2)}`);
  }
  if (b?.daily_tokens) {
    share = Math.max(share, t.tokens / b.daily_tokens);
    parts.push(`${compact(t.tokens)} of ${compact(b.daily_tokens)} tokens`);
  }
  return { share, over: share >= 1, warn: share >= WARN_AT, parts };
}

/** 1234 → "1.2k", 2_000_000 → "2M". */
export function compact(n: number): string {
  if (n < 1000) return String(Math.round(n));
  if (n < 1e6) return `${trim(n / 1e3)}k`;
  if (n < 1e9) return `${trim(n / 1e6)}M`;
  return `${trim(n / 1e9)}G`;
}

function trim(x: number): string {
  return x >= 100 ? String(Math.round(x)) : String(Math.round(x * 10) / 10);
}
