/**
 * What Chorus does for bots that are not its agents (Telegram's bot-to-bot mode, Discord with
 * `allow_bots`): an agent answers such a bot like a person, and in a room of several chats the
 * bot's message is copied into the other chats, where another bot may answer it. Two bots (or a
 * bot and an agent) answering each other would never stop, and a window that refills each minute
 * only paces them: they start again. So every bot's exchanges are counted per partner (an agent
 * answering it, or the copies of its messages made in the room's other chats):
 *
 * - at most `perMinute` events in the last minute, the pace of ordinary bot use;
 * - a pair that uses its minute's budget, or makes `withoutPerson` events while no person writes
 *   in the group, stops, and stays stopped until a person writes there again: an exchange needs
 *   no pace to be endless, and only a person can tell it is wanted.
 *
 * A stopped pair's messages are still recorded and shown (nothing a bot wrote is lost); its agent
 * does not answer them, they are not copied to the room's other chats. Kept in memory: a restart
 * starts afresh, which at worst allows one more budget.
 */
const WINDOW_MS = 60_000;
/** Pairs remembered at most; a new one past it is refused (a flood of bot ids cannot grow this). */
const MAX_PAIRS = 10_000;

/** The partner that stands for copying a bot's messages into the room's other chats. */
export const RELAY = 'relay';

/** Why a pair is stopped: its minute's budget, or too many events while no person wrote. */
export type BotStop = 'minute' | 'person';

interface Pair {
  /** Times of the events in the last minute, oldest first. */
  times: number[];
  /** Events since a person last wrote in the group. */
  sincePerson: number;
  stopped?: BotStop | undefined;
}

export interface BotLimits {
  perMinute: number;
  withoutPerson: number;
}

export class BotPairs {
  /** group → `bot|partner` → its events. */
  private readonly groups = new Map<string, Map<string, Pair>>();
  private size = 0;

  constructor(readonly limits: BotLimits) {}

  /** From the config's `limits` (defaults where a caller leaves them out). */
  static from(l: { bot_pair_events_per_minute?: number | undefined; bot_pair_events_without_person?: number | undefined }): BotPairs {
    return new BotPairs({ perMinute: l.bot_pair_events_per_minute ?? 10, withoutPerson: l.bot_pair_events_without_person ?? 30 });
  }

  /**
   * Whether `partner` (an agent id, or RELAY) may act on a message of bot `botId` now; counts the
   * event when it may. Otherwise why the pair is stopped (until a person writes in the group).
   */
  take(groupId: string, botId: string, partner: string, now: number): { ok: true } | { ok: false; why: BotStop } {
    const pair = this.pair(groupId, `${botId}|${partner}`);
    if (!pair) return { ok: false, why: 'person' };
    pair.times = pair.times.filter((t) => t > now - WINDOW_MS);
    if (!pair.stopped && pair.times.length >= this.limits.perMinute) pair.stopped = 'minute';
    if (!pair.stopped && pair.sincePerson >= this.limits.withoutPerson) pair.stopped = 'person';
    if (pair.stopped) return { ok: false, why: pair.stopped };
    pair.times.push(now);
    pair.sincePerson++;
    return { ok: true };
  }

  /**
   * A person wrote in the group: its stopped pairs may go on, and the count of events without a
   * person starts again. The minute's window stays (a person does not refill it).
   */
  personWrote(groupId: string, now: number): void {
    const pairs = this.groups.get(groupId);
    if (!pairs) return;
    for (const [key, pair] of pairs) {
      pair.stopped = undefined;
      pair.sincePerson = 0;
      pair.times = pair.times.filter((t) => t > now - WINDOW_MS);
      // Nothing left to remember: forgotten, so the map holds only pairs active lately.
      if (pair.times.length === 0) {
        pairs.delete(key);
        this.size--;
      }
    }
    if (pairs.size === 0) this.groups.delete(groupId);
  }

  private pair(groupId: string, key: string): Pair | undefined {
    let pairs = this.groups.get(groupId);
    const known = pairs?.get(key);
    if (known) return known;
    // Full: refused rather than forgetting a stopped pair, which would let its exchange go on.
    if (this.size >= MAX_PAIRS) return undefined;
    if (!pairs) this.groups.set(groupId, (pairs = new Map()));
    const made: Pair = { times: [], sincePerson: 0 };
    pairs.set(key, made);
    this.size++;
    return made;
  }
}

/** How a stopped pair is explained: `who` does not answer / copy `bot` until a person writes. */
export function stopReason(limits: BotLimits, why: BotStop): string {
  return why === 'minute'
    ? `${limits.perMinute} messages in the last minute`
    : `${limits.withoutPerson} messages while no person wrote`;
}
