/**
 * Price table lookups and cost estimates: the cost recorded with each model call's usage, which
 * `/group usage`, the daily budget and the metrics add up.
 *
 * Prices are USD per million tokens. The configured table (`llm.prices`) is merged over
 * `DEFAULT_PRICES`; a cache write defaults to input × 1.25 and a cache read to input × 0.1 when a
 * row does not give them. Model ids are matched to their family: `claude-sonnet-4-5-20250929`,
 * `claude-sonnet-4-5@20250929` and `claude-sonnet-4-5-latest` all use the `claude-sonnet-4-5` row.
 */
import { DEFAULT_PRICES, type ChorusConfig } from '../config/schema.js';
import type { Usage } from '../core/types.js';

/** One row of the price table, as written in the config. */
export type PriceRow = ChorusConfig['llm']['prices'][string];

/** A fully resolved row: every rate known. */
export interface ResolvedPrice {
  /** The table key that matched. */
  key: string;
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
}

/** Multipliers applied to the input price when a row gives no explicit cache prices. */
const CACHE_WRITE_MULTIPLIER = 1.25;
const CACHE_READ_MULTIPLIER = 0.1;

/**
 * The family id of a model: lower case, without a date or `latest` suffix.
 * `claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`.
 */
export function modelFamily(model: string): string {
  return model
    .trim()
    .toLowerCase()
    .replace(/[-@]\d{8}$/, '')
    .replace(/-latest$/, '');
}

/**
 * Find the row for `model`: in the configured table, then in the defaults, an exact key or else a
 * key of the same family. Returns null for models neither table knows.
 */
export function resolvePrice(model: string, prices: Record<string, PriceRow> | undefined = {}): ResolvedPrice | null {
  // The configured table wins over the defaults, also at family level; within a table an exact
  // key wins over a family match.
  const tables: Array<Record<string, PriceRow>> = [prices ?? {}, DEFAULT_PRICES];
  const family = modelFamily(model);
  let found: [string, PriceRow] | undefined;
  for (const table of tables) {
    const exact = table[model];
    if (exact) {
      found = [model, exact];
      break;
    }
    const match = Object.entries(table).find(([key]) => modelFamily(key) === family);
    if (match) {
      found = match;
      break;
    }
  }
  if (!found) return null;
  const [key, row] = found;
  return {
    key,
    input: row.input,
    output: row.output,
    cacheWrite: row.cache_write ?? row.input * CACHE_WRITE_MULTIPLIER,
    cacheRead: row.cache_read ?? row.input * CACHE_READ_MULTIPLIER,
  };
}

/**
 * Estimated cost of one call in USD, or null when the model has no price. `usage.inputTokens` are
 * the uncached input tokens (Anthropic's `input_tokens`); cache reads and writes are billed at
 * their own rates.
 */
export function estimateCost(model: string, usage: Usage, prices?: Record<string, PriceRow>): number | null {
  const p = resolvePrice(model, prices);
  if (!p) return null;
  const micro =
    usage.inputTokens * p.input +
    usage.outputTokens * p.output +
    usage.cacheWriteTokens * p.cacheWrite +
    usage.cacheReadTokens * p.cacheRead;
  return micro / 1_000_000;
}
