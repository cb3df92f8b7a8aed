/**
 * A tiny path router: patterns like `/api/groups/:id/members/:agent`, exact segment matching,
 * percent-decoded parameters. Tells "no such path" (404) apart from "path exists, other method"
 * (405 with the allowed methods).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError } from './http.js';

/** What a handler gets for one request. */
export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  params: Record<string, string>;
}

export type Handler = (ctx: RequestContext) => Promise<void> | void;

interface Route {
  method: string;
  segments: string[];
  handler: Handler;
}

export type RouteMatch =
  | { kind: 'found'; handler: Handler; params: Record<string, string> }
  | { kind: 'method_not_allowed'; allowed: string[] }
  | { kind: 'not_found' };

export class Router {
  private readonly routes: Route[] = [];

  add(method: string, pattern: string, handler: Handler): this {
    this.routes.push({ method, segments: split(pattern), handler });
    return this;
  }

  match(method: string, pathname: string): RouteMatch {
    const parts = split(pathname);
    const allowed = new Set<string>();
    for (const route of this.routes) {
      const params = matchSegments(route.segments, parts);
      if (!params) continue;
      if (route.method === method || (method === 'HEAD' && route.method === 'GET')) {
        return { kind: 'found', handler: route.handler, params };
      }
      allowed.add(route.method);
      if (route.method === 'GET') allowed.add('HEAD');
    }
    if (allowed.size > 0) return { kind: 'method_not_allowed', allowed: [...allowed] };
    return { kind: 'not_found' };
  }
}

function split(path: string): string[] {
  return path.split('/').filter((s) => s !== '');
}

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | null {
  if (pattern.length !== parts.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    const v = parts[i]!;
    if (p.startsWith(':')) {
      let decoded: string;
      try {
        decoded = decodeURIComponent(v);
      } catch {
        throw new HttpError(400, 'bad_path', 'malformed percent-encoding in the path');
      }
      params[p.slice(1)] = decoded;
    } else if (p !== v) {
      return null;
    }
  }
  return params;
}
