/**
 * Keeping secrets (API keys, bot tokens, the web token) out of logs and notices, also when only
 * part of one shows up. A provider that echoes a key back often shortens or masks it
 * ("sk-PROBE-SECR***"), so looking for the whole secret is not enough: any run of at least
 * `MIN_FRAGMENT` characters that also occurs in a secret is removed.
 *
 * How: every window of `MIN_FRAGMENT` characters of every secret goes into a set; the text is
 * scanned once, each position's window looked up, and every span covered by matching windows is
 * replaced by `***`. Any fragment of 8 or more characters is covered by its own windows, so it
 * disappears whole. The cost is linear in the text.
 */
import type { ChorusConfig } from './config/schema.js';

/** Fragments of a secret this long or longer are removed. */
export const MIN_FRAGMENT = 8;
/** Whole secrets shorter than a fragment are still removed when they appear in full. */
const MIN_WHOLE = 4;
const MASK = '***';

export class Redactor {
  private readonly windows = new Set<string>();
  private readonly whole: string[] = [];

  constructor(secrets: ReadonlyArray<string | null | undefined> = []) {
    this.add(secrets);
  }

  /** Whether there is anything to look for. */
  get active(): boolean {
    return this.windows.size > 0 || this.whole.length > 0;
  }

  /** Add secrets (e.g. after a config reload); empty and very short values are ignored. */
  add(secrets: ReadonlyArray<string | null | undefined>): void {
    for (const raw of secrets) {
      const s = raw?.trim();
      if (!s || s.length < MIN_WHOLE) continue;
      // The forms a secret takes when it is logged inside JSON or sent in a URL.
      for (const form of new Set([s, JSON.stringify(s).slice(1, -1), encodeURIComponent(s)])) {
        if (form.length < MIN_FRAGMENT) {
          if (!this.whole.includes(form)) this.whole.push(form);
          continue;
        }
        // A Telegram token starts with the bot's numeric id, which is public (every user of the
        // bot sees it): windows inside that id alone are not secret and would only blank out ids.
        const publicPrefix = /^\d+(?::|%3A)/i.exec(form)?.[0].length ?? 0;
        for (let i = 0; i + MIN_FRAGMENT <= form.length; i++) {
          if (i + MIN_FRAGMENT <= publicPrefix - 1) continue;
          this.windows.add(form.slice(i, i + MIN_FRAGMENT));
        }
      }
    }
    this.whole.sort((a, b) => b.length - a.length);
  }

  /** `text` with every fragment of a secret (8+ characters) and every short secret replaced by `***`. */
  redact(text: string): string {
    if (!this.active || text.length < MIN_WHOLE) return text;
    let out = text;
    if (this.windows.size > 0 && out.length >= MIN_FRAGMENT) {
      let result = '';
      let last = 0;
      let spanStart = -1;
      let spanEnd = -1;
      for (let i = 0; i + MIN_FRAGMENT <= out.length; i++) {
        if (!this.windows.has(out.slice(i, i + MIN_FRAGMENT))) continue;
        if (spanStart >= 0 && i <= spanEnd) {
          spanEnd = i + MIN_FRAGMENT;
          continue;
        }
        if (spanStart >= 0) {
          result += out.slice(last, spanStart) + MASK;
          last = spanEnd;
        }
        spanStart = i;
        spanEnd = i + MIN_FRAGMENT;
        // Inside a JSON string a cut right after a backslash would leave a broken escape.
        if (spanStart > last && out[spanStart - 1] === '\\') spanStart--;
      }
      if (spanStart >= 0) {
        result += out.slice(last, spanStart) + MASK;
        last = spanEnd;
      }
      out = last === 0 ? out : result + out.slice(last);
    }
    for (const w of this.whole) if (out.includes(w)) out = out.split(w).join(MASK);
    return out;
  }
}

/** Replace every secret, and every fragment of 8+ characters of one, in `text` with `***`. */
export function redactSecrets(text: string, secrets: ReadonlyArray<string | null | undefined>): string {
  return new Redactor(secrets).redact(text);
}

/** Every secret a config holds: the LLM key, bot tokens, the Discord token, the web token, MCP servers' credentials. */
export function configSecrets(config: ChorusConfig): string[] {
  const out: Array<string | null | undefined> = [
    config.llm.api_key,
    config.channels.discord.token,
    config.channels.web.auth_token,
    config.channels.telegram.webhook.secret_token,
    config.channels.telegram.relay_token,
    ...config.agents.map((a) => a.telegram?.token),
    databasePassword(config.storage.url),
    ...toolSecrets(config.tools),
  ];
  return out.filter((s): s is string => typeof s === 'string' && s.trim().length > 0);
}

/**
 * What an MCP server is given to prove who is calling: every header value (an authorization
 * header's token without its scheme word), environment values whose names say they are secrets,
 * and a password in the URL. Other environment values (a region, a mode) stay readable in logs.
 */
function toolSecrets(tools: ChorusConfig['tools']): string[] {
  const out: string[] = [];
  for (const s of Object.values(tools)) {
    for (const v of Object.values(s.headers ?? {})) out.push(v.replace(/^(Bearer|Basic|Token)\s+/i, ''));
    for (const [k, v] of Object.entries(s.env ?? {})) if (/KEY|TOKEN|SECRET|PASS|AUTH|CREDENTIAL/i.test(k)) out.push(v);
    const p = databasePassword(s.url);
    if (p) out.push(p);
  }
  return out;
}

/** The password in a database connection string (the rest of it, host and user, is not secret). */
function databasePassword(url: string | null | undefined): string | null {
  if (!url) return null;
  try {
    const p = new URL(url).password;
    return p ? decodeURIComponent(p) : null;
  } catch {
    return null;
  }
}
