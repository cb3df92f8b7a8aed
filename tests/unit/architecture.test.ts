/**
 * Rules for the shape of the code. The core (src/core) imports only itself, p-queue,
 * node:crypto (a digest is computation, not I/O) and node:async_hooks (which task of a group's
 * mailbox is running: bookkeeping, not I/O) — no channel adapter, model SDK, HTTP or
 * file-system module — so it talks to the world only through its ports (src/core/ports.ts) and
 * runs in tests against fakes. And src/ has no import cycles.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect, it } from 'vitest';

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

it('src/core imports only itself, p-queue, node:crypto and node:async_hooks', () => {
  const offenders: string[] = [];
  for (const f of files('src/core')) {
    for (const m of readFileSync(f, 'utf8').matchAll(/^import[^'"]*['"]([^'"]+)['"]/gm)) {
      const spec = m[1]!;
      const ok = spec === 'p-queue' || spec === 'node:crypto' || spec === 'node:async_hooks' || (spec.startsWith('.') && !/\.\.\/\.\.\/(channels|llm|store|config)|^\.\.\/(channels|llm|store|config)/.test(spec) && !spec.includes('/channels/') && !spec.includes('/llm/') && !spec.includes('/store/') && !spec.includes('/config/'));
      if (!ok) offenders.push(`${f}: ${spec}`);
    }
  }
  expect(offenders).toEqual([]);
});

/**
 * Every relative import in `src/` — `import type`, `export … from` and dynamic `import()` included —
 * as an edge between two files. A cycle, even a type-only one, means two files can only be
 * understood together; the answer is a third file both can import.
 */
function importGraph(root: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const all = new Set(files(root));
  for (const f of all) {
    const text = readFileSync(f, 'utf8');
    const targets = new Set<string>();
    const patterns = [/^\s*(?:import|export)\b[^'"]*?\bfrom\s*['"]([^'"]+)['"]/gms, /^\s*import\s*['"]([^'"]+)['"]/gm, /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g];
    for (const re of patterns) {
      for (const m of text.matchAll(re)) {
        const spec = m[1]!;
        if (!spec.startsWith('.')) continue;
        const target = join(dirname(f), spec.replace(/\.js$/, '.ts'));
        if (all.has(target)) targets.add(target);
      }
    }
    graph.set(f, [...targets]);
  }
  return graph;
}

/** Strongly connected components with more than one file (or a file importing itself): Tarjan. */
function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return found;
}

it('finds a cycle when there is one (the check itself can fail)', () => {
  const g = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
    ['d', ['a']],
  ]);
  expect(cycles(g)).toEqual([['a', 'b', 'c']]);
});

it('src/ has no import cycles, type-only imports included', () => {
  const graph = importGraph('src');
  // The parser must see the imports at all, or the check below passes vacuously.
  expect([...graph.values()].reduce((n, t) => n + t.length, 0)).toBeGreaterThan(200);
  expect(cycles(graph)).toEqual([]);
});

/** Longer than this, a file is hard to hold in one's head: split it along a seam it already has. */
const MAX_LINES = 400;

it(`no src/ file is over ${MAX_LINES} lines`, () => {
  const lineCount = (f: string): number => {
    const text = readFileSync(f, 'utf8');
    return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  };
  const counted = files('src').map((f) => ({ f, lines: lineCount(f) }));
  expect(counted.length).toBeGreaterThan(100); // the walk found the sources at all
  expect(
    counted.filter((c) => c.lines > MAX_LINES).map((c) => `${c.f}: ${c.lines} lines`),
    `over ${MAX_LINES} lines: split these files`,
  ).toEqual([]);
});

/**
 * With several instances, what reaches one for a group another runs is routed by the cluster's
 * wrapper around the router (src/cluster/ClusteredHost.ts), not by the core: the core has no port
 * to hand a message or a change to another instance, and no cluster module.
 */
it('the core does not route to other instances: no hand-over port, no cluster import', () => {
  const offenders: string[] = [];
  for (const f of files('src/core')) {
    const text = readFileSync(f, 'utf8');
    if (/\bforwardChange\b|\bbeforeReceive\b|peers\.forward\(/.test(text)) offenders.push(`${f}: hands over to another instance`);
    if (/from '[^']*cluster\//.test(text)) offenders.push(`${f}: imports the cluster`);
  }
  expect(offenders).toEqual([]);
  // The wrapper is where routing lives, and it uses the hand-over it declares.
  const wrapper = readFileSync('src/cluster/ClusteredHost.ts', 'utf8');
  expect(wrapper).toMatch(/this\.owners\.forward\(/);
  expect(wrapper).toMatch(/this\.owners\.forwardChange\(/);
});
