/**
 * Who a web client is, for limits. The feed has no accounts: `author_name` is whatever the
 * client types, and a browser cookie is whatever the client sends, so neither may decide how much
 * a client is allowed. What a client cannot choose freely is the address it connects from (and,
 * when a token is configured, having the token at all, which every API caller then has). So
 * limits count per address; IPv6 addresses count per /64, the block one host is usually given,
 * so walking through its own addresses does not make a client new.
 *
 * Behind a reverse proxy every client shares the proxy's address: raise the limits there (or set
 * the connection cap to 0). Forwarded-for headers are not trusted because anyone can send them.
 */
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { HttpError } from './http.js';

/**
 * A browser's own key: random, made by the page once and kept in its localStorage, sent with each
 * API call as `X-Chorus-Client`. It answers one question only, "did this browser write that
 * message?", so a page can draw its own messages apart from other people's whatever names are
 * typed, and whether this browser may edit or delete a message (only the one that sent it may).
 * Like a name it is whatever the client sends, so it never counts for limits; it is as strong a
 * claim to a message as the key is secret (it never leaves the browser, only its tag is shown).
 */
export const CLIENT_KEY = /^[A-Za-z0-9_-]{16,128}$/;

/**
 * The tag recorded on what a key's browser posts, and shown to everyone. A one-way digest, so
 * reading the feed does not hand out a key another browser could send to have its messages drawn
 * as someone else's own.
 */
export function clientTag(key: string): string {
  return createHash('sha256').update('chorus-web-client\0' + key).digest('base64url').slice(0, 22);
}

/** The tag of the key an `X-Chorus-Client` header sends (undefined without one); a malformed key is a 400. */
export function tagOf(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || !CLIENT_KEY.test(header)) {
    throw new HttpError(400, 'invalid_header', 'X-Chorus-Client must be 16 to 128 letters, digits, _ or -');
  }
  return clientTag(header);
}

/**
 * Who a client without a key of its own is, where it must be told apart and the value is shown to
 * everyone (the `byKey` of its reactions): a one-way digest of its address key, never the address.
 */
export function addressTag(addressKey: string): string {
  return `addr:${createHash('sha256').update('chorus-web-address\0' + addressKey).digest('base64url').slice(0, 22)}`;
}

/** The key limits count against for a peer address (`undefined` when the socket is gone). */
export function clientAddressKey(remoteAddress: string | undefined): string {
  if (!remoteAddress) return 'unknown';
  let addr = remoteAddress.replace(/^\[|\]$/g, '');
  const zone = addr.indexOf('%');
  if (zone >= 0) addr = addr.slice(0, zone);
  // IPv4 clients of a dual-stack socket arrive as ::ffff:a.b.c.d.
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(addr);
  if (mapped) return mapped[1]!;
  if (isIP(addr) !== 6) return addr;
  const groups = expandIPv6(addr);
  return groups ? `${groups.slice(0, 4).join(':')}::/64` : addr;
}

/** The eight 16-bit groups of an IPv6 address, lower-case hex without leading zeros; null if malformed. */
function expandIPv6(addr: string): string[] | null {
  let text = addr.toLowerCase();
  // A trailing dotted quad (::ffff:1.2.3.4 was handled; other embeddings are rare) becomes two groups.
  const quad = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = text.slice(0, quad.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const all = [...head, ...Array.from({ length: halves.length === 2 ? missing : 0 }, () => '0'), ...tail];
  return all.map((g) => parseInt(g, 16).toString(16));
}
