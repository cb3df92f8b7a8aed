/**
 * pino, with known secret fields redacted as a second line of defence (we never log them).
 * On a terminal the lines are made readable with pino-pretty; elsewhere they stay JSON for
 * log collectors.
 */
import pino from 'pino';
import type { Logger } from './core/ports.js';

const REDACT = ['token', 'api_key', 'apiKey', 'auth_token', 'authorization', '*.token', '*.api_key', '*.apiKey', '*.authorization', 'headers.authorization'];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = { level, base: { app: 'chorus' }, redact: { paths: REDACT, censor: '[redacted]' } };
  if (!destination && process.stdout.isTTY && process.env.CHORUS_LOG_FORMAT !== 'json') {
    return pino({
      ...options,
      base: undefined,
      transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'HH:MM:ss', ignore: 'pid,hostname' } },
    }) as unknown as Logger;
  }
  return pino(options, destination ?? pino.destination({ dest: 1, sync: false })) as unknown as Logger;
}
