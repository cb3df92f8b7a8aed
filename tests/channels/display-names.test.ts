/**
 * Display names are cleaned where they enter from Telegram and Discord too:
 * a first name or Discord display name with a right-to-left override, zero-width or control
 * characters reaches the router as its visible letters, on one line, at most 64 characters.
 */
import type { Message } from 'grammy/types';
import { afterEach, describe, expect, it } from 'vitest';
import { normalizeMessage, type BotDirectory } from '../../src/channels/telegram/normalize.js';
import { setup, type DiscordSetup } from './discord/harness.js';

const INVISIBLE = /[\u200B-\u200F\u202A-\u202E\u2060-\u206F\u061C\uFEFF\u0000-\u001F]/;

describe('Telegram names', () => {
  const dir: BotDirectory = { agentByBotId: () => undefined, agentByUsername: () => undefined, isOwnBot: () => false };
  const message = (from: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    ({ message_id: 7, date: 1, chat: { id: -100200, type: 'supergroup', title: 'Team' }, from: { id: 42, is_bot: false, ...from }, text: 'hello', ...extra }) as unknown as Message;

  it('strips bidi, zero-width and control characters and bounds the length', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ first_name: '\u202Etsylan\u202CA' }, 'tsylanA'],
      [{ first_name: 'Ma\u200Bya', last_name: '\u2066Roe\u2069' }, 'Maya Roe'],
      [{ first_name: 'Maya\nAnalyst' }, 'Maya Analyst'],
      [{ first_name: '\u200B\u202E', username: 'maya_r' }, 'maya_r'],
      [{ first_name: '\u200B' }, 'user 42'],
      [{ first_name: 'x'.repeat(80) }, 'x'.repeat(64)],
    ];
    for (const [from, want] of cases) {
      const result = normalizeMessage(message(from), 'analyst', dir, () => undefined);
      const name = 'message' in result ? result.message.author.name : result.skip;
      expect(name, JSON.stringify(from)).toBe(want);
      expect(name).not.toMatch(INVISIBLE);
    }
    const anon = normalizeMessage(message({ first_name: 'Group' }, { sender_chat: { id: -100200, type: 'supergroup', title: '\u202Emaet\u202C' } }), 'analyst', dir, () => undefined);
    expect('message' in anon && anon.message.author.name).toBe('maet');
  });
});

describe('Discord names', () => {
  let s: DiscordSetup | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('strips bidi and zero-width characters from display names', async () => {
    s = await setup();
    await s.channel.start(s.host);
    const tricky = s.fake.addUser('\u202Etsylan\u202CA\u200B');
    s.fake.humanSays(s.chatId, tricky, 'hi');
    const [msg] = await s.host.waitForReceived(1);
    expect(msg!.author.name).toBe('tsylanA');
  });
});
