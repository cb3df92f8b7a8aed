/**
 * Builds the web page once before the tests, with the same builder as `npm run build`
 * (scripts/build-page.cjs), into the cache the server reads when it runs from src/. The servers
 * the tests start then serve exactly the bundle a build ships, without each test file building
 * it again (or two at once) under its own time limit.
 *
 * A page that does not build fails no test here: the servers report it themselves, and the tests
 * that load the page fail with it.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';

interface PageBuilder {
  cachedPage(srcDir: string): string;
}

export default function setup(): void {
  const builder = createRequire(import.meta.url)('../../scripts/build-page.cjs') as PageBuilder;
  try {
    builder.cachedPage(join(import.meta.dirname, '..', '..', 'src', 'channels', 'web', 'public'));
  } catch (err) {
    console.warn(`[page bundle] the web page did not build: ${err instanceof Error ? err.message : String(err)}`);
  }
}
