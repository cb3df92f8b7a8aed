/**
 * What Chorus does for bots that are not its agents (Telegram's bot-to-bot mode, Discord with
 * `allow_bots`): an agent answers such a bot like a person, and in a room of several chats the
 * bot's message is copied into the other chats, where another bot may answer the copy. Two bots
 * (or a bot and an agent) answering each other would never stop, and a window that refills each
 * minute only paces them: they start again. So, per group:
 *
 * - each pair (a bot and an agent answering it, or a bot and the copies of its messages in the
 *   room's other chats: RELAY) gets at most `perMinute` events in the last minute, the pace of
 *   ordinary bot use;
 * - a pair that needs more, or `withoutPerson` events for bots while no person writes in the
 *   group, stops every bot exchange there until a person writes again: an exchange needs no pace
 *   to be endless, both of its sides must stop (the two bots' pairs with RELAY are different
 *   pairs), and only a person can tell it is wanted.
 *
 * A bot's message refused this way is still recorded and shown (nothing a bot wrote is lost); no
 * agent answers it and it is not copied to the room's other chats. Kept in memory: a restart
 * starts afresh, which at worst allows one more budget.
 */
const WINDOW_MS = 60_000;
/** Pairs remembered at most; a new one past it is refused (a flood of bot ids cannot grow this). */
const MAX_PAIRS = 10_000;

/** The partner that stands for copying a bot's messages into the room's other chats (never an agent id). */
const RELAY = '#copies';

/** Why bots are stopped in a group: a pair's minute's budget, or too many events while no person wrote. */
export type BotStop = 'minute' | 'person';

interface GroupBots {
  /** `bot|partner` → times of its events in the last minute, oldest first. */
  pairs: Map<string, number[]>;
  /** Events for bots since a person last wrote in the group. */
  sincePerson: number;
  stopped?: BotStop | undefined;
}

export interface BotLimits {
  perMinute: number;
  withoutPerson: number;
}

/** The config's keys for them (`limits.*`). */
export interface BotLimitsConfig {
  bot_pair_events_per_minute?: number | undefined;
  bot_pair_events_without_person?: number | undefined;
}

type Taken = { ok: true } | { ok: false; why: BotStop };

/** The bot, as its entry names it. */
type BotAuthor = { authorId: string; authorName: string };

export class BotPairs {
  private readonly groups = new Map<string, GroupBots>();
  private size = 0;

  constructor(readonly limits: BotLimits) {}

  /** From the config's `limits` (defaults where a caller leaves them out). */
  static from(l: BotLimitsConfig): BotPairs {
    const { bot_pair_events_per_minute: perMinute = 10, bot_pair_events_without_person: withoutPerson = 30 } = l;
    return new BotPairs({ perMinute, withoutPerson });
  }

  /** Why `agent` may not answer `bot`'s message now (the answer is counted when it may). */
  answerRefused(groupId: string, bot: BotAuthor, agent: { id: string; name: string }, now: number): string | undefined {
    const taken = this.take(groupId, bot.authorId, agent.id, now);
    if (taken.ok) return undefined;
    return `${agent.name} does not answer ${bot.authorName} until a person writes here: ${this.reason(taken.why)}`;
  }

  /** Why `bot`'s message may not be copied to the room's other chats now (counted when it may). */
  copyRefused(groupId: string, bot: BotAuthor, now: number): string | undefined {
    const taken = this.take(groupId, bot.authorId, RELAY, now);
    if (taken.ok) return undefined;
    const why = this.reason(taken.why);
    return `${bot.authorName}'s messages are not copied to the room's other chats until a person writes here: ${why}`;
  }

  /**
   * Whether `partner` (an agent id, or RELAY) may act on a message of bot `botId` now; counts the
   * event when it may. Otherwise why bots are stopped in the group (until a person writes there).
   */
  private take(groupId: string, botId: string, partner: string, now: number): Taken {
    let g = this.groups.get(groupId);
    if (!g) this.groups.set(groupId, (g = { pairs: new Map(), sincePerson: 0 }));
    if (g.stopped) return { ok: false, why: g.stopped };
    const key = `${botId}|${partner}`;
    const times = (g.pairs.get(key) ?? []).filter((t) => t > now - WINDOW_MS);
    if (!g.pairs.has(key)) {
      // Full: refused rather than forgetting a pair, whose exchange would then go on.
      if (this.size >= MAX_PAIRS) return { ok: false, why: 'person' };
      this.size++;
    }
    g.pairs.set(key, times);
    if (times.length >= this.limits.perMinute) g.stopped = 'minute';
    else if (g.sincePerson >= this.limits.withoutPerson) g.stopped = 'person';
    if (g.stopped) return { ok: false, why: g.stopped };
    times.push(now);
    g.sincePerson++;
    return { ok: true };
  }

  /**
   * A person wrote in the group: bots may be answered and copied again, and the count of events
   * without a person starts afresh. The minute's windows stay (a person does not refill them).
   */
  personWrote(groupId: string, now: number): void {
    const g = this.groups.get(groupId);
    if (!g) return;
    g.stopped = undefined;
    g.sincePerson = 0;
    for (const [key, times] of g.pairs) {
      const recent = times.filter((t) => t > now - WINDOW_MS);
      if (recent.length > 0) g.pairs.set(key, recent);
      else {
        // Nothing left to remember: the map holds only pairs active lately.
        g.pairs.delete(key);
        this.size--;
      }
    }
    if (g.pairs.size === 0) this.groups.delete(groupId);
  }

  /** Why bots are stopped, for the quiet line that says so. */
  private reason(why: BotStop): string {
    const { perMinute, withoutPerson } = this.limits;
    return why === 'minute'
      ? `a bot got ${perMinute} answers or copies from one partner in the last minute`
      : `bots got ${withoutPerson} answers or copies while no person wrote`;
  }
}
