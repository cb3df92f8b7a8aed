/**
 * Builds the configured real LLM provider. The offline `scripted` provider and the
 * fallback to it when no API key is configured belong to the start-up code, not here.
 */
import type { ChorusConfig } from '../config/schema.js';
import type { LlmProvider, Logger } from '../core/ports.js';
import { AnthropicProvider } from './AnthropicProvider.js';
import { OpenAiProvider } from './OpenAiProvider.js';

/** `limits.max_image_pixels` goes too: an image over it is never sent (absent: the default). */
export function createProvider(
  config: ChorusConfig['llm'],
  logger: Logger,
  limits: { max_image_pixels?: number | undefined } = {},
): LlmProvider {
  const maxImagePixels = limits.max_image_pixels;
  switch (config.provider) {
    case 'anthropic':
      return new AnthropicProvider({ config, logger, maxImagePixels });
    case 'openai':
      return new OpenAiProvider({ config, logger, maxImagePixels });
    default:
      throw new Error(`createProvider: llm.provider "${config.provider}" is not a network provider (use the scripted provider for it)`);
  }
}
