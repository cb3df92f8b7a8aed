/** pino, with known secret fields redacted as a second line of defence (we never log them). */
import pino from 'pino';
import type { Logger } from './core/ports.js';

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { app: 'chorus' },
      redact: {
        paths: ['token', 'api_key', 'apiKey', 'auth_token', 'authorization', '*.token', '*.api_key', '*.apiKey', '*.authorization', 'headers.authorization'],
        censor: '[redacted]',
      },
    },
    destination ?? pino.destination({ dest: 1, sync: false }),
  ) as unknown as Logger;
}
