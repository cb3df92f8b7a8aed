/** What the Telegram channel is built from. */
import type { ChorusConfig } from '../../config/schema.js';
import type { ConnectionGate, DeadLetters, Logger } from '../../core/ports.js';
import type { AgentDef } from '../../core/types.js';
import type { HttpMounts } from '../web/mounts.js';

type TelegramConfig = ChorusConfig['channels']['telegram'];
/** Tests may build the channel by hand without the webhook keys (polling is the default) or a relay bot. */
type TelegramConfigInput = Omit<TelegramConfig, 'mode' | 'webhook' | 'relay_token'> & Partial<Pick<TelegramConfig, 'mode' | 'webhook' | 'relay_token'>>;

export interface TelegramChannelOptions {
  config: TelegramConfigInput;
  agents: AgentDef[];
  logger: Logger;
  /** getUpdates long-poll timeout; shorter in tests is fine, Telegram allows up to 50. */
  pollTimeoutSeconds?: number;
  /** Webhook mode: where the endpoints are served (the web channel's HTTP server). */
  mounts?: HttpMounts | undefined;
  /** Webhook mode: how often each bot's getWebhookInfo is checked (default one minute). */
  webhookCheckMs?: number | undefined;
  /** Polling mode with several instances: each bot's long poll is held by one instance (a lease). */
  connections?: ConnectionGate | undefined;
  /** Where updates that can never be handed over are kept; without it, in their log line. */
  deadLetters?: DeadLetters | undefined;
}
