/**
 * Shared set-up for the Telegram adapter tests: three agents with bots on the fake Bot API, a
 * host that records every hand-over attempt, and a polling helper.
 */
import { TelegramChannel } from '../../../src/channels/telegram/TelegramChannel.js';
import type { Logger } from '../../../src/core/ports.js';
import type { AgentDef, InboundMessage, ReceiveResult } from '../../../src/core/types.js';
import { FakeTelegram, type FakeUser } from '../../fakes/telegram/FakeTelegram.js';
import { RecordingHost } from '../../helpers/recording-host.js';
import { silentLogger } from '../../helpers/logger.js';

export const TOKENS = {
  analyst: '111111:AAA-analyst-test-token',
  writer: '222222:BBB-writer-test-token',
  critic: '333333:CCC-critic-test-token',
  editor: '444444:DDD-editor-test-token',
} as const;
export type AgentId = keyof typeof TOKENS;

export const USERNAMES: Record<AgentId, string> = {
  analyst: 'chorus_analyst_bot',
  writer: 'chorus_writer_bot',
  critic: 'chorus_critic_bot',
  editor: 'chorus_editor_bot',
};

/** The relay bot (`channels.telegram.relay_token`): posts people from the room's other chats. */
export const RELAY = { token: '555555:EEE-relay-test-token', username: 'chorus_relay_bot', firstName: 'Chorus relay' } as const;

export const MAYA: FakeUser = { id: 5001, first_name: 'Maya', username: 'maya' };
export const TOM: FakeUser = { id: 5002, first_name: 'Tom' };

export function agentDef(id: AgentId, withToken = true): AgentDef {
  const name = id[0]!.toUpperCase() + id.slice(1);
  return {
    id, name, persona: `You are the ${id}.`, model: null, avatar: null, color: null, aliases: [], talkativeness: 0.5,
    telegram: withToken ? { token: TOKENS[id] } : undefined,
  };
}

/** Records every hand-over (including duplicates) and can fail the next N, like a full disk. */
export class CountingHost extends RecordingHost {
  readonly attempts: InboundMessage[] = [];
  failNext = 0;
  override async receive(msg: InboundMessage): Promise<ReceiveResult> {
    this.attempts.push(msg);
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('disk full');
    }
    return super.receive(msg);
  }
}

export async function waitUntil<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, what: string, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export interface World {
  fake: FakeTelegram;
  agents: AgentDef[];
  channel: TelegramChannel;
  host: CountingHost;
  close(): Promise<void>;
}

/** A fake platform with the given agents' bots registered (privacy off unless listed). */
export async function makeWorld(opts: {
  ids?: AgentId[];
  privacyOn?: AgentId[];
  logger?: Logger;
  admins?: string[];
  noToken?: AgentId[];
  /** Give the channel a relay bot (`relay_token`). */
  relay?: boolean;
  /** Bots with Telegram's Bot-to-Bot Communication Mode on. */
  botToBot?: AgentId[];
} = {}): Promise<World> {
  const ids = opts.ids ?? ['analyst', 'writer', 'critic'];
  const fake = await FakeTelegram.start();
  for (const id of ids) {
    fake.addBot({ token: TOKENS[id], username: USERNAMES[id], firstName: agentDef(id).name, canReadAll: !opts.privacyOn?.includes(id), botToBot: opts.botToBot?.includes(id) ?? false });
  }
  if (opts.relay) fake.addBot({ token: RELAY.token, username: RELAY.username, firstName: RELAY.firstName });
  const agents = ids.map((id) => agentDef(id, !opts.noToken?.includes(id)));
  const channel = new TelegramChannel({
    config: { enabled: true, api_root: fake.apiRoot, auto_create_groups: true, admins: opts.admins ?? [], relay_token: opts.relay ? RELAY.token : null },
    agents,
    logger: opts.logger ?? silentLogger,
    pollTimeoutSeconds: 5,
  });
  const host = new CountingHost(agents);
  return {
    fake, agents, channel, host,
    async close() {
      await channel.stop();
      await fake.close();
    },
  };
}

/**
 * Config YAML for a whole Chorus app on the fake Bot API: the given agents with their bots,
 * scripted provider, web off, short timeouts. Shared by the end-to-end and fault tests.
 */
export function telegramAppYaml(o: { dataDir: string; apiRoot: string; agents: AgentId[]; autoCreate?: boolean; admins?: number[] }): string {
  const agents = o.agents
    .map(
      (id) => `  - id: ${id}
    name: ${agentDef(id).name}
    persona: You are the ${id}.
    telegram: { token: "${TOKENS[id]}" }`,
    )
    .join('\n');
  return `data_dir: ${JSON.stringify(o.dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
${agents}
group_defaults: { cooldown_seconds: 0, voluntary_timeout_seconds: 20, agent_reply_timeout_seconds: 20 }
channels:
  web: { enabled: false }
  telegram: { enabled: true, api_root: "${o.apiRoot}", auto_create_groups: ${o.autoCreate ?? true}, admins: [${(o.admins ?? []).join(', ')}] }
`;
}
