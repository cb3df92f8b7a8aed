/**
 * The page's files: index.html and what it loads, as built by scripts/build-page.cjs (bundled,
 * minified, content-hashed names, each text file also stored brotli- and gzip-compressed). Only
 * the files the build lists are served, from memory, so no request path ever reaches the file
 * system and no response is compressed per request.
 *
 * Caching: a hashed name never changes content, so it may be kept for a year without asking
 * again; index.html is asked for every time (`no-cache`, answered 304 while its ETag holds), so a
 * new build reaches every browser on its next load.
 *
 * A compiled `dist/` holds the built page next to this module. Running from `src/` (tsx, the
 * tests) there is only the source: it is built with the same builder into a cache keyed by its
 * content (node_modules/.cache/chorus-page), so what is served is always what a build would ship.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
};

const IMMUTABLE = 'public, max-age=31536000, immutable';
const MANIFEST = 'page.json';
/** Stored encodings, best first, with the suffix of their file beside the plain one. */
const ENCODINGS = [
  { name: 'br', suffix: '.br' },
  { name: 'gzip', suffix: '.gz' },
] as const;

/** Find the `public/` folder of the web channel: the built page in dist/, else the source. */
export function findPublicDir(moduleUrl: string = import.meta.url): string | null {
  const here = dirname(fileURLToPath(moduleUrl));
  const candidates = [join(here, 'public')];
  let dir = here;
  for (let i = 0; i < 6; i++) {
    candidates.push(join(dir, 'src', 'channels', 'web', 'public'));
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  for (const c of candidates) {
    if (existsSync(join(c, 'index.html'))) return c;
  }
  return null;
}

interface PageBuilder {
  cachedPage(srcDir: string): string;
}

/**
 * The built page for `dir`: `dir` itself when it is one (it holds page.json), else the build of
 * that source folder, made now or found in the cache. Throws when the source does not build.
 */
export function builtPageDir(dir: string): string {
  if (existsSync(join(dir, MANIFEST))) return dir;
  // The builder sits in the project's scripts/ beside src/ (not in an installed image, which
  // always ships a built page).
  for (let up = dir, i = 0; i < 6; i++, up = dirname(up)) {
    const builder = join(up, 'scripts', 'build-page.cjs');
    if (existsSync(builder)) return (createRequire(import.meta.url)(builder) as PageBuilder).cachedPage(dir);
  }
  throw new Error(`${dir} is the page's source and no scripts/build-page.cjs was found to build it`);
}

interface Variant {
  body: Buffer;
  etag: string;
  /** Content-Encoding, or null for the file as it is. */
  encoding: string | null;
}

interface StaticFile {
  type: string;
  immutable: boolean;
  /** Compressed variants first, the file as it is last. */
  variants: Variant[];
}

interface Manifest {
  files: Record<string, { immutable: boolean; encodings: string[] }>;
}

/** Loaded pages by folder: a built folder never changes (its name is its content's hash). */
const loadedPages = new Map<string, Map<string, StaticFile>>();

function loadPage(dir: string): Map<string, StaticFile> {
  const known = loadedPages.get(dir);
  if (known) return known;
  const files = new Map<string, StaticFile>();
  const manifest = JSON.parse(readFileSync(join(dir, MANIFEST), 'utf8')) as Manifest;
  for (const [name, info] of Object.entries(manifest.files)) {
    const type = TYPES[extname(name).toLowerCase()];
    if (!type || name.includes('/')) continue;
    const body = readFileSync(join(dir, name));
    const tag = etagOf(body);
    const variants: Variant[] = [];
    for (const enc of ENCODINGS) {
      if (!info.encodings.includes(enc.name)) continue;
      variants.push({ body: readFileSync(join(dir, name + enc.suffix)), etag: `"${tag}-${enc.name}"`, encoding: enc.name });
    }
    variants.push({ body, etag: `"${tag}"`, encoding: null });
    files.set('/' + name, { type, immutable: info.immutable, variants });
  }
  loadedPages.set(dir, files);
  return files;
}

export class StaticFiles {
  private readonly files: Map<string, StaticFile> = new Map();
  /** Why there is no page to serve although a folder was given, or null. */
  readonly problem: string | null = null;

  constructor(dir: string | null) {
    if (!dir) return;
    try {
      this.files = loadPage(builtPageDir(dir));
    } catch (err) {
      // The API keeps working without the page, as when the page's folder is missing.
      this.problem = err instanceof Error ? err.message : String(err);
      process.stderr.write(`chorus: web: the page could not be built, serving the API only: ${this.problem}\n`);
    }
  }

  get loaded(): boolean {
    return this.files.has('/index.html');
  }

  /** The names served, for tests and diagnostics. */
  get paths(): string[] {
    return [...this.files.keys()];
  }

  /** Serve `pathname` if it is one of the files; returns false when it is not. */
  serve(pathname: string, headers: IncomingHttpHeaders, res: ServerResponse): boolean {
    const file = this.files.get(pathname === '/' ? '/index.html' : pathname);
    if (!file) return false;
    const accepted = acceptedEncodings(headers['accept-encoding']);
    const v = file.variants.find((x) => x.encoding === null || accepted.has(x.encoding))!;
    const common: Record<string, string> = {
      etag: v.etag,
      'cache-control': file.immutable ? IMMUTABLE : 'no-cache',
    };
    if (file.variants.length > 1) common.vary = 'accept-encoding';
    if (matches(headers['if-none-match'], v.etag)) {
      res.writeHead(304, common);
      res.end();
      return true;
    }
    res.writeHead(200, {
      ...common,
      'content-type': file.type,
      'content-length': v.body.length,
      ...(v.encoding ? { 'content-encoding': v.encoding } : {}),
    });
    res.end(v.body);
    return true;
  }
}

/** The codings an Accept-Encoding header allows (q > 0), `*` standing for any not named. */
export function acceptedEncodings(header: string | string[] | undefined): Set<string> {
  const q = new Map<string, number>();
  for (const part of String(header ?? '').split(',')) {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    if (!coding) continue;
    const qp = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const value = qp ? Number(qp.slice(2)) : 1;
    q.set(coding, Number.isFinite(value) ? value : 0);
  }
  const ok = new Set<string>();
  for (const { name } of ENCODINGS) {
    const value = q.get(name) ?? q.get('*') ?? 0;
    if (value > 0) ok.add(name);
  }
  return ok;
}

/** If-None-Match names `etag` (weak comparison, as the header asks) or is `*`. */
function matches(header: string | string[] | undefined, etag: string): boolean {
  if (typeof header !== 'string') return false;
  return header.split(',').some((t) => {
    const tag = t.trim().replace(/^W\//, '');
    return tag === '*' || tag === etag;
  });
}

function etagOf(body: Buffer): string {
  return createHash('sha1').update(body).digest('base64url').slice(0, 20);
}
