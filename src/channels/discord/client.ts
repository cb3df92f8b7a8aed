/**
 * The discord.js clients the adapter makes: one logged in to the gateway (reads the channels and
 * their reactions), or one for REST only (an instance of a cluster that does not hold the gateway).
 */
import { Client, GatewayIntentBits, Partials } from 'discord.js';

/** Message Content is privileged (the Developer Portal must allow it); the others are not. */
export const GATEWAY_INTENTS = [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.GuildMessageReactions, GatewayIntentBits.MessageContent];

/** `api`: the REST root without the version (undefined: Discord's); the gateway URL comes from `<api>/gateway/bot`. */
export function newClient(api: string | undefined, gateway: boolean): Client {
  return new Client({
    intents: gateway ? GATEWAY_INTENTS : [],
    // Reactions on messages discord.js does not hold arrive as partials (reactionEvents.ts).
    ...(gateway ? { partials: [Partials.Message, Partials.Reaction, Partials.User] } : {}),
    ...(api ? { rest: { api } } : {}),
    allowedMentions: { parse: ['users'] },
  });
}
