/**
 * Search over the whole history: `GET /api/groups/:id/search` (one group, dissolved ones too) and
 * `GET /api/search` (every live group). Results come newest first with a plain-text snippet and
 * the offsets of its matched words; `next` is an opaque cursor for the page after, null after the
 * last. Validation mistakes are 400s like every other route.
 */
import type { GatewayApi } from '../../core/ports.js';
import type { SearchCursor } from '../../core/readModels.js';
import type { SearchPage } from '../../core/readModels.js';
import { SEARCH_PAGE_MAX } from '../../core/groups/history.js';
import { HttpError, intParam, sendJson } from './http.js';
import type { RequestContext, Router } from './router.js';

/** Longest query, in characters. */
export const MAX_QUERY = 200;

export function registerSearchRoutes(router: Router, gw: () => GatewayApi): void {
  const run = async ({ res, url }: RequestContext, groupId: string | undefined): Promise<void> => {
    const q = url.searchParams.get('q');
    if (q === null || q.trim() === '') throw new HttpError(400, 'invalid_query', '"q" is required: the words to search for');
    if (q.length > MAX_QUERY) throw new HttpError(400, 'invalid_query', `"q" may have at most ${MAX_QUERY} characters`);
    const limit = intParam(url.searchParams, 'limit', { min: 1, max: SEARCH_PAGE_MAX }) ?? 20;
    const cursor = url.searchParams.get('cursor');
    const before = cursor === null || cursor === '' ? undefined : decodeCursor(cursor);
    const gateway = gw();
    const page = await gateway.search({ groupId, q, limit, before });
    sendJson(res, 200, answer(page));
  };
  router.add('GET', '/api/search', (ctx) => run(ctx, undefined));
  router.add('GET', '/api/groups/:id/search', (ctx) => run(ctx, ctx.params.id!));
}

function answer(page: SearchPage): { results: SearchPage['results']; cursor: string | null } {
  return { results: page.results, cursor: page.next ? encodeCursor(page.next) : null };
}

export function encodeCursor(c: SearchCursor): string {
  return Buffer.from(JSON.stringify([c.ts, c.groupId, c.seq]), 'utf8').toString('base64url');
}

function decodeCursor(text: string): SearchCursor {
  const bad = new HttpError(400, 'invalid_cursor', '"cursor" is not one this server gave out');
  if (text.length > 400 || !/^[A-Za-z0-9_-]+$/.test(text)) throw bad;
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw bad;
  }
  if (!Array.isArray(v) || v.length !== 3) throw bad;
  const [ts, groupId, seq] = v as unknown[];
  if (typeof ts !== 'number' || !Number.isFinite(ts) || typeof groupId !== 'string' || groupId.length > 100 || !Number.isSafeInteger(seq) || (seq as number) < 0) throw bad;
  return { ts, groupId, seq: seq as number };
}

/** `GET /api/groups/:id/messages?around=<seq>`: the page around that entry, with `hasNewer`. */
export async function sendAround(res: RequestContext['res'], gateway: GatewayApi, id: string, around: number, limit: number, before: number | undefined): Promise<void> {
  if (before !== undefined) throw new HttpError(400, 'invalid_query', '"around" and "before" cannot be used together');
  const page = await gateway.messagesAround(id, { around, limit });
  sendJson(res, 200, { messages: page.entries, hasMore: page.hasMore, hasNewer: page.hasNewer });
}
