/**
 * The Discord adapter's view of the config, and the limits Discord imposes.
 */
import type { ChorusConfig } from '../../config/schema.js';

/**
 * `api_base` is the REST root *without* the version, like discord.js's default
 * "https://discord.com/api" (discord.js appends "/v10"). The gateway URL is not configured: it
 * comes from `<api_base>/v10/gateway/bot`, so a proxy or test server controls both.
 *
 * `emoji_avatar_base` turns emoji avatars into image URLs: "{codepoints}" in it becomes the
 * Twemoji-style file name ("1f4c8"), "{emoji}" the URL-encoded emoji; without a placeholder the
 * encoded emoji is appended.
 */
export type DiscordConfig = ChorusConfig['channels']['discord'];

/** Longest content of one Discord message. */
export const DISCORD_MAX_MESSAGE = 2000;

/** Discord shows "is typing…" for about 10 s; refresh a little before it runs out. */
export const TYPING_REFRESH_MS = 8000;

/** How long `start()` waits for the gateway to be ready before giving up with a clear error. */
export const READY_TIMEOUT_MS = 30_000;

/** Message ids remembered for reply-to-agent addressing (the router keeps its own durable copy). */
export const POSTED_INDEX_SIZE = 10_000;
