/**
 * Two bots that are not agents in one room across Telegram and Discord, each answering the copies
 * of the other's messages that Chorus makes in its chat: the whole app with real grammY and
 * discord.js against the fakes (tests/integration/rooms-harness.ts), on a fake clock. Without a
 * budget they would talk for ever; with one they stop within it, stay stopped when the minute is
 * over, and go on once a person writes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { TranscriptEntry } from '../../src/core/types.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { bootRoom, HELPER, RELAY, until, type RoomWorld } from './rooms-harness.js';

/** The Discord bot's name, and how the relayed Telegram bot looks on Discord. */
const ECHO = 'Echo';
const HELPER_ON_DISCORD = 'Helper (bot) · Telegram';

describe('two foreign bots across a room (real app, fake clock)', () => {
  let w: RoomWorld | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  it('answering each other through the copies, they stop within the budget and stay stopped', async () => {
    const clock = new FakeClock();
    w = await bootRoom({}, { clock, allowBots: true });
    const room = w;
    const echo = room.dc.addUser(ECHO, { bot: true });
    const g = () => room.app.router.groups.get(room.roomId)!;
    const entry = (text: string) => g().transcript.find((e) => e.kind === 'human' && e.text === text);
    const helperCopies = () => room.dcPosts().filter((p) => p.author.username === HELPER_ON_DISCORD);
    const echoCopies = () => room.tgPosts().filter((p) => p.bot === RELAY.username && p.text.includes(ECHO));

    /**
     * One bot says `text`, answering the last copy of the other bot in its chat (the helper on
     * Telegram, Echo on Discord); true when Chorus copied it into the other chat.
     */
    async function says(who: 'helper' | 'echo', text: string): Promise<boolean> {
      if (who === 'helper') room.tg.foreignBotSays(room.tgRoom, HELPER, text, { replyTo: echoCopies().at(-1) });
      else room.dc.humanSays(room.dcRoom, echo, text, { replyTo: helperCopies().at(-1)?.id });
      const e: TranscriptEntry = await until(() => entry(text), `"${text}" recorded`);
      expect(e.authorKind).toBe('bot');
      await room.idle();
      if (!e.copies) return false;
      if (who === 'helper') await until(() => helperCopies().some((p) => p.content === text), `"${text}" on Discord`);
      else await until(() => echoCopies().some((p) => p.text.endsWith(text)), `"${text}" on Telegram`);
      return true;
    }

    // Each answers the other's every copy, as two bots that answer everything do.
    let copied = 0;
    for (let i = 0; i < 20 && (await says(i % 2 === 0 ? 'helper' : 'echo', `ball ${i}`)); i++) copied++;
    // Three copies a minute per bot (bot_pair_events_per_minute in the harness): the helper's
    // fourth is kept on Telegram and the web, and Echo has nothing more to answer.
    expect(copied).toBe(6);
    expect(helperCopies().map((p) => p.content)).toEqual(['ball 0', 'ball 2', 'ball 4']);
    expect(echoCopies()).toHaveLength(3);
    const kept = g().transcript.filter((e) => e.kind === 'human').map((e) => e.text);
    expect(kept).toEqual([0, 1, 2, 3, 4, 5, 6].map((i) => `ball ${i}`));

    // A minute later their windows are empty, but the exchange stays stopped: neither is copied.
    await clock.advance(61_000);
    expect(await says('echo', 'ball 7')).toBe(false);
    expect(await says('helper', 'ball 8')).toBe(false);
    await clock.advance(61_000);
    expect(await says('helper', 'ball 9')).toBe(false);
    // No agent was asked anything.
    expect(room.llm.calls.filter((c) => c.purpose === 'turn')).toEqual([]);

    // A person writes in the room: the bots are copied again.
    await room.drain();
    expect(await says('helper', 'ball 10')).toBe(true);
  });
});
