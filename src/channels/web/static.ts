/**
 * The page's static files (index.html, app.js, app.css, icon). Only files that exist in the
 * `public/` folder at start are served, from memory, so no request path ever reaches the file
 * system. The folder is found next to this module under `tsx src/...`, and from a compiled
 * `dist/` by walking up to the source tree (tsc does not copy non-TS files).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
};

/** Find the `public/` folder of the web channel. */
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

/**
 * Browser builds of the page's libraries, served from node_modules under fixed names (never a
 * path taken from the request). Resolved through Node's own resolution from this module, which
 * finds the project's node_modules from `src/` and from `dist/` alike. dompurify's `require`
 * entry is its CommonJS build; the ES build sits beside it.
 */
const VENDOR: Record<string, () => string> = {
  '/vendor/marked.esm.js': () => createRequire(import.meta.url).resolve('marked'),
  '/vendor/purify.es.mjs': () => join(dirname(createRequire(import.meta.url).resolve('dompurify')), 'purify.es.mjs'),
};

/**
 * Code highlighting: highlight.js's core and a few common languages, each its own file, which the
 * page imports only when a message has a code block in that language (codehl.js). The languages'
 * ES builds stand alone; the core's ES entry only re-exports its CommonJS build, so that file is
 * served wrapped as a module (it requires nothing).
 */
export const HLJS_LANGUAGES = ['bash', 'css', 'diff', 'go', 'java', 'javascript', 'json', 'python', 'rust', 'sql', 'typescript', 'xml', 'yaml'];
const hljsDir = (): string => dirname(createRequire(import.meta.url).resolve('highlight.js/package.json'));
const HLJS_CORE = '/vendor/hljs/core.js';
VENDOR[HLJS_CORE] = () => join(hljsDir(), 'lib', 'core.js');
for (const lang of HLJS_LANGUAGES) VENDOR[`/vendor/hljs/${lang}.js`] = () => join(hljsDir(), 'es', 'languages', `${lang}.js`);

function commonJsAsModule(body: Buffer): Buffer {
  return Buffer.concat([Buffer.from('const module = { exports: {} };\n'), body, Buffer.from('\nexport default module.exports;\n')]);
}

interface StaticFile {
  body: Buffer;
  type: string;
  etag: string;
}

export class StaticFiles {
  private readonly files = new Map<string, StaticFile>();

  constructor(dir: string | null) {
    if (!dir) return;
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      const type = TYPES[extname(name).toLowerCase()];
      if (!type || !statSync(full).isFile()) continue;
      const body = readFileSync(full);
      this.files.set('/' + name, { body, type, etag: etagOf(body) });
    }
    for (const [route, locate] of Object.entries(VENDOR)) {
      // A broken install must not stop the daemon: the page then shows messages as plain text
      // (markdown.js), or code without colours (codehl.js).
      let body: Buffer;
      try {
        body = readFileSync(locate());
        if (route === HLJS_CORE) body = commonJsAsModule(body);
      } catch {
        continue;
      }
      this.files.set(route, { body, type: TYPES['.js']!, etag: etagOf(body) });
    }
  }

  get loaded(): boolean {
    return this.files.has('/index.html');
  }

  /** Serve `pathname` if it is one of the files; returns false when it is not. */
  serve(pathname: string, ifNoneMatch: string | undefined, res: ServerResponse): boolean {
    const file = this.files.get(pathname === '/' ? '/index.html' : pathname);
    if (!file) return false;
    if (ifNoneMatch && ifNoneMatch === file.etag) {
      res.writeHead(304, { etag: file.etag, 'cache-control': 'no-cache' });
      res.end();
      return true;
    }
    res.writeHead(200, {
      'content-type': file.type,
      'content-length': file.body.length,
      'cache-control': 'no-cache',
      etag: file.etag,
    });
    res.end(file.body);
    return true;
  }
}

function etagOf(body: Buffer): string {
  return '"' + createHash('sha1').update(body).digest('base64url').slice(0, 20) + '"';
}
