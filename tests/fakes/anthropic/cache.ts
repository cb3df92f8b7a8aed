/**
 * The prompt-cache model of the fake Anthropic server. See the module comment of `./index.ts` for
 * the rules; this file implements them on a parsed `POST /v1/messages` body.
 */
import { createHash } from 'node:crypto';

/** Default lifetime of an `ephemeral` entry, and of one marked `ttl: '1h'`. */
export const TTL_5M_MS = 5 * 60 * 1000;
export const TTL_1H_MS = 60 * 60 * 1000;
/** How many block boundaries before a breakpoint are checked for an existing entry. */
export const LOOKBACK_BLOCKS = 20;
/** Most breakpoints one request may carry. */
export const MAX_BREAKPOINTS = 4;
/** Tokens the API counts for every request outside any cacheable block (the assistant turn opener). */
export const REQUEST_OVERHEAD_TOKENS = 3;

/** Token estimate used everywhere in the fakes: one token per four characters, rounded up. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** Minimum cacheable prefix per model: 2048 tokens for Haiku models, 1024 for the others. */
export function defaultMinCacheTokens(model: string): number {
  return /haiku/i.test(model) ? 2048 : 1024;
}

/** One cacheable unit of a request, in hashing order (tools → system → messages). */
export interface PromptBlock {
  /** Where it came from: `tools[0]`, `system[1]`, `messages[2].content[0]`. */
  path: string;
  /** Canonical serialization without `cache_control` (markers do not change the content). */
  serialized: string;
  tokens: number;
  /** The block carries a `cache_control` marker (a breakpoint after it). */
  breakpoint: boolean;
  ttl: '5m' | '1h';
}

/** What the cache did for one request. */
export interface CacheOutcome {
  blocks: PromptBlock[];
  /** Block indexes carrying a breakpoint. */
  breakpoints: number[];
  /** Index of the last block read from cache, or -1. */
  readThrough: number;
  /** Block indexes where new entries were written. */
  written: number[];
  totalTokens: number;
  usage: {
    input_tokens: number;
    cache_read_input_tokens: number;
    cache_creation_input_tokens: number;
    cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  };
}

export class CacheRequestError extends Error {}

interface Entry {
  expiresAt: number;
  ttlMs: number;
  tokens: number;
}

type Json = Record<string, unknown>;

function withoutCacheControl(block: Json): Json {
  const { cache_control: _ignored, ...rest } = block;
  return rest;
}

function ttlOf(block: Json): '5m' | '1h' {
  const cc = block['cache_control'] as Json | undefined | null;
  return cc && cc['ttl'] === '1h' ? '1h' : '5m';
}

function blockTokens(block: Json): number {
  if (block['type'] === 'text' && typeof block['text'] === 'string') return estimateTokens(block['text']);
  return estimateTokens(JSON.stringify(withoutCacheControl(block)));
}

/** Flatten a request body into its cacheable blocks, in hashing order. */
export function flattenBlocks(body: Json): PromptBlock[] {
  const out: PromptBlock[] = [];
  const push = (path: string, prefix: string, block: Json) => {
    out.push({
      path,
      serialized: prefix + JSON.stringify(withoutCacheControl(block)),
      tokens: blockTokens(block),
      breakpoint: block['cache_control'] != null,
      ttl: ttlOf(block),
    });
  };
  const tools = Array.isArray(body['tools']) ? (body['tools'] as Json[]) : [];
  tools.forEach((t, i) => push(`tools[${i}]`, 'tool|', t));
  const system = body['system'];
  if (typeof system === 'string') push('system', 'system|', { type: 'text', text: system });
  else if (Array.isArray(system)) (system as Json[]).forEach((b, i) => push(`system[${i}]`, 'system|', b));
  const messages = Array.isArray(body['messages']) ? (body['messages'] as Json[]) : [];
  // `tool_choice` is part of what the message blocks are cached under (not the tools' or the
  // system's): a change of it is a miss from the first message on. Absent means `auto`.
  const choice = `choice|${JSON.stringify(body['tool_choice'] ?? { type: 'auto' })}|`;
  messages.forEach((m, i) => {
    const role = String(m['role']);
    const content = m['content'];
    const blocks: Json[] = typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? (content as Json[]) : [];
    blocks.forEach((b, j) => push(`messages[${i}].content[${j}]`, `${i === 0 && j === 0 ? choice : ''}${role}|${j === 0 ? 'start|' : ''}`, b));
  });
  // Automatic caching: a top-level cache_control puts a breakpoint on the last block.
  const top = body['cache_control'] as Json | undefined | null;
  const lastBlock = out[out.length - 1];
  if (top && lastBlock && !lastBlock.breakpoint) {
    lastBlock.breakpoint = true;
    lastBlock.ttl = top['ttl'] === '1h' ? '1h' : '5m';
  }
  return out;
}

/**
 * The cache store of one fake server: entries keyed by (model, exact prefix), each with an expiry
 * on the injected clock.
 */
export class PromptCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly now: () => number,
    private readonly minTokens: (model: string) => number = defaultMinCacheTokens,
  ) {}

  /** Live entries (for assertions): their token length and expiry. */
  snapshot(): Array<{ tokens: number; expiresAt: number }> {
    const t = this.now();
    return [...this.entries.values()].filter((e) => e.expiresAt > t).map((e) => ({ tokens: e.tokens, expiresAt: e.expiresAt }));
  }

  clear(): void {
    this.entries.clear();
  }

  /** Check a body without touching the cache; throws `CacheRequestError` for invalid markers. */
  validate(body: Json): PromptBlock[] {
    const blocks = flattenBlocks(body);
    const n = blocks.filter((b) => b.breakpoint).length;
    if (n > MAX_BREAKPOINTS) {
      throw new CacheRequestError(`A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${n}.`);
    }
    return blocks;
  }

  /** Account one request: read the longest live prefix, write entries past it, return usage. */
  account(body: Json): CacheOutcome {
    const model = String(body['model']);
    const blocks = this.validate(body);
    const now = this.now();

    // Cumulative hashes and token counts at every block boundary.
    const hashes: string[] = [];
    const cum: number[] = [];
    let h = createHash('sha256').update(`model|${model}`).digest('hex');
    let tokens = 0;
    for (const b of blocks) {
      h = createHash('sha256').update(h).update('\u0000').update(b.serialized).digest('hex');
      tokens += b.tokens;
      hashes.push(h);
      cum.push(tokens);
    }
    const totalTokens = tokens + REQUEST_OVERHEAD_TOKENS;
    const breakpoints = blocks.flatMap((b, i) => (b.breakpoint ? [i] : []));

    // Read: at each breakpoint, the boundary itself and up to LOOKBACK_BLOCKS boundaries before it.
    let readThrough = -1;
    for (const p of breakpoints) {
      for (let j = p; j >= Math.max(0, p - LOOKBACK_BLOCKS); j--) {
        const e = this.entries.get(hashes[j]!);
        if (e && e.expiresAt > now) {
          if (j > readThrough) readThrough = j;
          break;
        }
      }
    }
    // A hit refreshes the lifetime of what was used: the entry read and every live entry that is
    // a prefix of it (their content was used too).
    for (let j = 0; j <= readThrough; j++) {
      const e = this.entries.get(hashes[j]!);
      if (e && e.expiresAt > now) e.expiresAt = now + e.ttlMs;
    }

    // Write: every breakpoint past the read point whose prefix is long enough.
    const min = this.minTokens(model);
    const written: number[] = [];
    for (const p of breakpoints) {
      if (p <= readThrough || cum[p]! < min) continue;
      const ttlMs = blocks[p]!.ttl === '1h' ? TTL_1H_MS : TTL_5M_MS;
      this.entries.set(hashes[p]!, { expiresAt: now + ttlMs, ttlMs, tokens: cum[p]! });
      written.push(p);
    }

    const readTokens = readThrough >= 0 ? cum[readThrough]! : 0;
    let w5 = 0;
    let w1 = 0;
    let from = readTokens;
    for (const p of written) {
      const seg = cum[p]! - from;
      if (blocks[p]!.ttl === '1h') w1 += seg;
      else w5 += seg;
      from = cum[p]!;
    }
    const writeTokens = w5 + w1;
    return {
      blocks,
      breakpoints,
      readThrough,
      written,
      totalTokens,
      usage: {
        input_tokens: totalTokens - readTokens - writeTokens,
        cache_read_input_tokens: readTokens,
        cache_creation_input_tokens: writeTokens,
        cache_creation: { ephemeral_5m_input_tokens: w5, ephemeral_1h_input_tokens: w1 },
      },
    };
  }
}
