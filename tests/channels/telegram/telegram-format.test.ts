/** Pure helpers of the Telegram adapter: Markdown → Telegram HTML, chat id encoding, what is read. */
import { describe, expect, it } from 'vitest';
import { toTelegramHtml } from '../../../src/channels/telegram/format.js';
import type { Message } from 'grammy/types';
import { dmChatId, normalizeMessage, parseChatId } from '../../../src/channels/telegram/normalize.js';
import { parseHtml } from '../../fakes/telegram/entities.js';

describe('telegram format', () => {
  it('renders fences, inline code, bold and links, escaping everything else', () => {
    const md = 'Use **care** with `a<b>` & [docs](https://x.test/?a=1&b=2)\n```ts\nif (a < b && c) {}\n```\n<script>';
    const html = toTelegramHtml(md);
    expect(html).toBe(
      'Use <b>care</b> with <code>a&lt;b&gt;</code> &amp; <a href="https://x.test/?a=1&amp;b=2">docs</a>\n' +
        '<pre><code class="language-ts">if (a &lt; b &amp;&amp; c) {}</code></pre>\n&lt;script&gt;',
    );
    // What Telegram would show: valid markup, no lost characters.
    expect(parseHtml(html)).toBe('Use care with a<b> & docs\nif (a < b && c) {}\n<script>');
  });

  it('encodes one DM chat per agent and decodes it back', () => {
    expect(dmChatId('writer', 42)).toBe('dm:writer:42');
    expect(parseChatId('dm:writer:42')).toEqual({ tgId: 42, dmAgentId: 'writer' });
    expect(parseChatId('-1001000000001')).toEqual({ tgId: -1001000000001 });
  });

  it("says why a message is not read: Chorus's own bot wrote it, a bot in a private chat, or it has no text", () => {
    const dir = { agentByBotId: (id: number) => (id === 8 ? 'writer' : undefined), agentByUsername: () => undefined, isOwnBot: (id: number) => id === 8 || id === 10 };
    const message = (extra: Record<string, unknown>) => ({ message_id: 7, date: 1, chat: { id: -100200, type: 'supergroup', title: 'Team' }, ...extra }) as unknown as Message;
    const read = (extra: Record<string, unknown>) => normalizeMessage(message(extra), 'analyst', dir, () => undefined);
    expect(read({ from: { id: 8, is_bot: true, first_name: 'Writer' }, text: 'hi' })).toEqual({ skip: "an agent's bot (Chorus's own post)" });
    expect(read({ from: { id: 10, is_bot: true, first_name: 'Relay' }, text: 'hi' })).toEqual({ skip: "the relay bot (Chorus's own post)" });
    expect(read({ from: { id: 9, is_bot: true, first_name: 'Other' }, chat: { id: 5, type: 'private', first_name: 'Other' }, text: 'hi' })).toEqual({ skip: 'a bot in a private chat' });
    // Another bot in a group (Telegram's bot-to-bot mode) speaks like a person, marked as a bot.
    expect(read({ from: { id: 9, is_bot: true, first_name: 'Other' }, text: 'hi' })).toMatchObject({ message: { author: { id: '9', name: 'Other' }, authorKind: 'bot' } });
    expect(read({ from: { id: 42, is_bot: false, first_name: 'Maya' }, sticker: {} })).toEqual({ skip: 'no text' });
    expect(read({ from: { id: 42, is_bot: false, first_name: 'Maya' }, text: 'hi' })).toMatchObject({ message: { chatId: '-100200', messageId: '7', text: 'hi', author: { id: '42', name: 'Maya' } } });
  });
});
