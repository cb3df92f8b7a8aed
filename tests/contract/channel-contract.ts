/**
 * The contract every channel adapter keeps (SPEC §7): start/stop are idempotent, platform
 * traffic is normalised into InboundMessage, posts go out under the agent's identity, and the
 * adapter never hands its own posts back as inbound messages (no echo).
 *
 * An adapter test calls `runChannelContract('telegram', makeHarness)` inside its own file.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Channel } from '../../src/core/ports.js';
import type { AgentDef, ChatRef } from '../../src/core/types.js';
import { RecordingHost } from '../helpers/recording-host.js';

/** What an adapter's test provides so the contract can drive it against its fake platform. */
export interface ChannelHarness {
  channel: Channel;
  host: RecordingHost;
  /** A chat on the fake platform where `agent` can post and humans can talk. */
  chat: ChatRef;
  agent: AgentDef;
  /** A human says `text` in `chat` on the fake platform. Returns the platform message id. */
  humanSays(text: string): Promise<string>;
  /** Everything the fake platform shows in `chat`, oldest first. `author` is the display name. */
  posted(): Promise<Array<{ id: string; author: string; text: string }>>;
  /** Stop fakes and free ports. */
  close(): Promise<void>;
}

export function runChannelContract(name: string, make: () => Promise<ChannelHarness>): void {
  describe(`channel contract: ${name}`, () => {
    let h: ChannelHarness | undefined;
    afterEach(async () => {
      await h?.channel.stop();
      await h?.close();
      h = undefined;
    });

    it('start and stop are idempotent', async () => {
      h = await make();
      await h.channel.start(h.host);
      await h.channel.start(h.host);
      await h.channel.stop();
      await h.channel.stop();
      await h.channel.start(h.host);
      const id = await h.humanSays('still alive after restart');
      const got = await h.host.waitForReceived(1);
      expect(got.at(-1)?.messageId).toBe(id);
    });

    it('normalises a human message', async () => {
      h = await make();
      await h.channel.start(h.host);
      const id = await h.humanSays('hello @' + h.agent.id);
      const [msg] = await h.host.waitForReceived(1);
      expect(msg).toMatchObject({ channel: name, chatId: h.chat.chatId, messageId: id, text: 'hello @' + h.agent.id });
      expect(msg!.author.id).toBeTruthy();
      expect(msg!.author.name).toBeTruthy();
      expect(typeof msg!.ts).toBe('number');
    });

    it('posts as the agent, split to the platform limit, and never echoes its own posts', async () => {
      h = await make();
      await h.channel.start(h.host);
      const limit = h.channel.capabilities.maxMessageLength;
      const long = Array.from({ length: Math.ceil((limit * 1.5) / 60) }, (_, i) => `line ${i} `.padEnd(59, '.')).join('\n');
      const res = await h.channel.postAsAgent(h.chat, h.agent, long);
      expect(res.ids.length).toBe(2);
      await h.channel.postAsSystem(h.chat, 'system notice');
      const shown = await h.posted();
      const mine = shown.filter((p) => p.author === h!.agent.name);
      expect(mine.map((p) => p.id)).toEqual(res.ids);
      expect(mine.every((p) => p.text.length <= limit)).toBe(true);
      expect(mine.map((p) => p.text).join('').replace(/\s+/g, '')).toBe(long.replace(/\s+/g, ''));
      expect(shown.some((p) => p.text === 'system notice')).toBe(true);
      // Give the platform time to deliver echoes; none may come back as inbound.
      await h.humanSays('marker after posts');
      const got = await h.host.waitForReceived(1);
      expect(got.map((m) => m.text)).toEqual(['marker after posts']);
    });
  });
}
