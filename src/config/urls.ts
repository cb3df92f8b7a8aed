/**
 * Web addresses in the config. The WHATWG parser that `z.string().url()` uses accepts almost
 * anything with a colon (`htp:/127.0.0.1:11434/v1` is a valid URL with the scheme "htp"), so a
 * typo in a model server's address used to pass `check` and fail only at the first request, as
 * "unreachable". Here the scheme and the host are checked as a person means them.
 */
import { z } from 'zod';

/** Why `text` is not a usable http(s) address, or null when it is one. */
export function httpUrlProblem(text: string): string | null {
  const shown = text.length > 60 ? `${text.slice(0, 60)}…` : text;
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(text)?.[1]?.toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') {
    return `must start with http:// or https:// (got "${shown}")`;
  }
  // The parser mends "http:/host" and "http:host" into "http://host/"; a person who typed one
  // slash most likely meant something else, so it is named rather than guessed.
  if (!/^https?:\/\/[^/]/i.test(text)) return `must be ${scheme}://host[:port][/path] (got "${shown}")`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `is not a valid address (got "${shown}"; check the host and the port)`;
  }
  if (url.hostname === '') return `has no host (got "${shown}")`;
  return null;
}

/** A string that must be an http:// or https:// address. */
export function httpUrl() {
  return z
    .string()
    .trim()
    .superRefine((value, ctx) => {
      const problem = httpUrlProblem(value);
      if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
    });
}
