/**
 * pino, with known secret fields redacted as a second line of defence (we never log them).
 * On a terminal the lines are made readable with pino-pretty; elsewhere they stay JSON for
 * log collectors.
 */
import pino from 'pino';
import type { Logger } from './core/ports.js';
import { Redactor } from './redact.js';

const REDACT = ['token', 'api_key', 'apiKey', 'auth_token', 'authorization', '*.token', '*.api_key', '*.apiKey', '*.authorization', 'headers.authorization'];

/** The secret scrubber behind each logger made here (children share their root's). */
const redactors = new WeakMap<object, Redactor>();

/**
 * Every finished log line, whatever field or message carries it, has each secret and each
 * fragment of 8+ characters of one replaced by `***` (src/redact.ts) before it is written. This
 * catches what the field paths above cannot: a provider or platform error that quotes part of a
 * key inside its message text.
 */
export function createLogger(level: string, destination?: pino.DestinationStream, secrets: ReadonlyArray<string | null | undefined> = []): Logger {
  const redactor = new Redactor(secrets);
  const options: pino.LoggerOptions = {
    level,
    base: { app: 'chorus' },
    redact: { paths: REDACT, censor: '[redacted]' },
    hooks: { streamWrite: (line) => redactor.redact(line) },
  };
  const logger = createPino(options, destination);
  redactors.set(logger, redactor);
  return logger;
}

/**
 * Teach a logger made by `createLogger` the secrets of a config (the app does this once the
 * config is known, and again after a reload). Other loggers (tests' own) are left alone.
 */
export function addLogSecrets(logger: Logger, secrets: ReadonlyArray<string | null | undefined>): void {
  redactors.get(logger)?.add(secrets);
}

function createPino(options: pino.LoggerOptions, destination: pino.DestinationStream | undefined): Logger {
  if (!destination && process.stdout.isTTY && process.env.CHORUS_LOG_FORMAT !== 'json') {
    return pino({
      ...options,
      base: undefined,
      transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'HH:MM:ss', ignore: 'pid,hostname' } },
    }) as unknown as Logger;
  }
  return pino(options, destination ?? pino.destination({ dest: 1, sync: false })) as unknown as Logger;
}
