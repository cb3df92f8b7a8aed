/**
 * The shared channel contract, run against the Discord adapter and the fake Discord.
 */
import { runChannelContract } from '../../contract/channel-contract.js';
import { WRITER, setup } from './harness.js';

runChannelContract('discord', async () => {
  const s = await setup();
  return {
    channel: s.channel,
    host: s.host,
    chat: { channel: 'discord', chatId: s.chatId },
    agent: WRITER,
    async humanSays(text: string) {
      return s.fake.humanSays(s.chatId, s.maya, text);
    },
    async posted() {
      return s.fake.posts(s.chatId).map((m) => ({ id: m.id, author: m.author.username, text: m.content }));
    },
    close: () => s.close(),
  };
});
