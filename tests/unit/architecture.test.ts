/** The core imports no adapter, SDK, HTTP or file-system module (ARCHITECTURE.md). */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

it('src/core imports only itself and p-queue', () => {
  const offenders: string[] = [];
  for (const f of files('src/core')) {
    for (const m of readFileSync(f, 'utf8').matchAll(/^import[^'"]*['"]([^'"]+)['"]/gm)) {
      const spec = m[1]!;
      const ok = spec === 'p-queue' || (spec.startsWith('.') && !/\.\.\/\.\.\/(channels|llm|store|config)|^\.\.\/(channels|llm|store|config)/.test(spec) && !spec.includes('/channels/') && !spec.includes('/llm/') && !spec.includes('/store/') && !spec.includes('/config/'));
      if (!ok) offenders.push(`${f}: ${spec}`);
    }
  }
  expect(offenders).toEqual([]);
});
