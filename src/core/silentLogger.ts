import type { Logger } from './ports.js';

/** A Logger that drops everything (dry runs such as `chorus check`). */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};
