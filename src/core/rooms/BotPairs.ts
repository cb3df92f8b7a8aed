/**
 * A budget per pair of bots. With Telegram's bot-to-bot mode a bot that is not an agent can talk
 * in a room, and an agent answers it like a person — two bots answering each other would never
 * stop. Each answer of an agent to such a bot's message counts for that pair; past
 * `limits.bot_pair_events_per_minute` answers in the last minute the agent does not answer that
 * bot (the bot's messages are still recorded and shown). Kept in memory: a restart starts the
 * minute afresh, which at worst allows one more minute's budget.
 */
const WINDOW_MS = 60_000;

export class BotPairs {
  /** `group|bot|agent` → times of the answers in the window, oldest first. */
  private readonly events = new Map<string, number[]>();

  constructor(private readonly perMinute: number) {}

  /**
   * Whether `agentId` may answer a message of bot `botId` now; counts the answer when it may.
   * False when the pair used its budget within the last minute.
   */
  take(groupId: string, botId: string, agentId: string, now: number): boolean {
    const key = `${groupId}|${botId}|${agentId}`;
    const recent = (this.events.get(key) ?? []).filter((t) => t > now - WINDOW_MS);
    if (recent.length >= this.perMinute) {
      this.events.set(key, recent);
      return false;
    }
    recent.push(now);
    this.events.set(key, recent);
    // Forget pairs that went quiet, so the map does not grow with every bot ever seen.
    if (this.events.size > 10_000) for (const [k, v] of this.events) if (!v.some((t) => t > now - WINDOW_MS)) this.events.delete(k);
    return true;
  }

  get limit(): number {
    return this.perMinute;
  }
}
