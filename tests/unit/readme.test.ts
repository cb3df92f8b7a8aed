/**
 * The README shows only what exists. Every `npm …` / `npx …` it shows names a script in
 * package.json, an npm built-in or an installed binary; every `node bin/chorus.js <cmd>` /
 * `chorus <cmd>` a command of the CLI (its USAGE in src/main.ts) with options it takes, and every
 * flag after `init` is in INIT_USAGE; every chat command (`/group <sub>`, `/ask`, …) is one the
 * command module parses and lists. Every relative link in README.md and docs/*.md reaches a file,
 * and a `#anchor` into a Markdown file a heading there. The README starts with the two commands
 * and stays at most 300 lines.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { INIT_USAGE } from '../../src/ops/init.js';
import { demoAgents } from '../../src/ops/initConfig.js';
import { COMMAND_LIST, parseCommand } from '../../src/core/commands/commands.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');

const TOP = [
  '```sh',
  'npm install && npm start     # web feed on http://127.0.0.1:8787 with three demo agents, no keys needed',
  'npm install && npm test      # type-check and the whole test suite (browser tests need Debian\'s chromium)',
  '```',
];

// ---------------------------------------------------------------------------------------------
// What exists

interface Known {
  scripts: Set<string>;
  /** `chorus <cmd>` commands, from the USAGE text in src/main.ts (`init` included). */
  cliCommands: Set<string>;
  /** Options of `chorus <cmd>` (all but init), from the same text. */
  cliOptions: Set<string>;
  initFlags: Set<string>;
  /** The `x` of every `/group x` the command module lists. */
  groupSubcommands: Set<string>;
  agents: Set<string>;
  /** Paths the web server answers itself (`/readyz`), which look like commands in a code span. */
  httpPaths: (word: string) => boolean;
  binaries: Set<string>;
}

/** npm's own commands a README may show; `test` and `start` also need a script. */
const NPM_BUILTINS = new Set(['install', 'i', 'ci', 'test', 't', 'start', 'stop', 'restart', 'run', 'exec']);
/** @BotFather's commands, which the README tells people to send to BotFather, not to Chorus. */
const BOTFATHER = new Set(['/newbot', '/setprivacy', '/mybots', '/setjoingroups', '/token', '/revoke']);

function flagsIn(text: string): Set<string> {
  return new Set([...text.matchAll(/(?<![\w-])(--?[a-zA-Z][\w-]*)/g)].map((m) => m[1]!));
}

function knownFromRepo(): Known {
  const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
  const main = read('src/main.ts');
  const usage = /const USAGE = `([\s\S]*?)`;/.exec(main)?.[1];
  if (!usage) throw new Error('src/main.ts has no USAGE text');
  const commandsPart = /Commands:\n([\s\S]*?)\n\n/.exec(usage)?.[1] ?? '';
  const optionsPart = /Options:\n([\s\S]*?)(?:\n\n|$)/.exec(usage)?.[1] ?? '';
  const cliCommands = new Set([...commandsPart.matchAll(/^ {2}([a-z][\w-]*)\s/gm)].map((m) => m[1]!));
  const server = read('src/channels/web/server.ts');
  return {
    scripts: new Set(Object.keys(pkg.scripts)),
    cliCommands,
    cliOptions: flagsIn(optionsPart),
    // INIT_USAGE is what `init --help` prints; --help itself is the one flag it does not list.
    initFlags: new Set([...flagsIn(INIT_USAGE), ...(/\bhelp: \{ type: 'boolean', short: 'h' \}/.test(read('src/ops/init.ts')) ? ['--help', '-h'] : [])]),
    groupSubcommands: new Set(COMMAND_LIST.filter((c) => c.command.startsWith('/group ')).map((c) => c.command.split(' ')[1]!)),
    agents: new Set(demoAgents().map((a) => a.id)),
    httpPaths: (word) => server.includes(`'${word}'`),
    binaries: new Set(existsSync(join(ROOT, 'node_modules', '.bin')) ? readdirSync(join(ROOT, 'node_modules', '.bin')) : []),
  };
}

// ---------------------------------------------------------------------------------------------
// What a Markdown text shows

/** Fenced blocks out, so neither their `# comments` nor their text read as headings or links. */
function withoutFences(md: string): string {
  return md.replace(/^([ \t]*)(```|~~~)[^\n]*\n[\s\S]*?^\1\2[ \t]*$/gm, '');
}

/** Every piece of code the text shows: each inline span, and each (continued) line of a fenced block. */
function codeSnippets(md: string): string[] {
  const out: string[] = [];
  for (const m of md.matchAll(/^[ \t]*(```|~~~)([^\n]*)\n([\s\S]*?)^[ \t]*\1[ \t]*$/gm)) {
    const lang = m[2]!.trim().toLowerCase();
    if (['yaml', 'yml', 'json', 'text'].includes(lang)) continue;
    out.push(...m[3]!.replace(/\\\n/g, ' ').split('\n'));
  }
  // A span may wrap onto the next line of its paragraph.
  for (const m of withoutFences(md).matchAll(/(`+)([^`]+?)\1(?!`)/g)) out.push(m[2]!.replace(/\s+/g, ' '));
  return out.map((s) => s.trim()).filter(Boolean);
}

/** A shell snippet's commands: the comment cut off, split at `&&`, `||`, `;` and `|`. */
function shellCommands(snippet: string): string[][] {
  return snippet
    .replace(/(^|\s)#.*$/, '')
    .split(/&&|\|\||;|\|/)
    .map((c) => c.trim().split(/\s+/).filter(Boolean))
    .filter((t) => t.length > 0);
}

const isEnvAssignment = (t: string) => /^[A-Z_][A-Z0-9_]*=/.test(t);
const flagName = (t: string) => t.replace(/=.*$/, '');

/** Problems with the shell commands a text shows; empty when every one exists. */
function commandProblems(md: string, k: Known): string[] {
  const problems: string[] = [];
  const checkFlags = (shown: string, tokens: string[], allowed: Set<string>, what: string) => {
    for (const t of tokens) {
      if (/^--?[a-zA-Z]/.test(t) && !allowed.has(flagName(t))) problems.push(`${shown}: ${flagName(t)} is not an option of ${what}`);
    }
  };
  for (const snippet of codeSnippets(md)) {
    for (const tokens of shellCommands(snippet)) {
      let i = 0;
      while (i < tokens.length && isEnvAssignment(tokens[i]!)) i++;
      const shown = tokens.join(' ');
      const at = tokens.findIndex((t, j) => j >= i && t === 'npm');
      if (at >= 0) {
        const sub = tokens[at + 1];
        if (sub === 'run') {
          const script = tokens[at + 2];
          if (!script || !k.scripts.has(script)) problems.push(`${shown}: no script "${script ?? ''}" in package.json`);
        } else if (sub && !sub.startsWith('-')) {
          if (!NPM_BUILTINS.has(sub)) problems.push(`${shown}: "npm ${sub}" is neither an npm command nor a script run this way (npm run ${sub})`);
          else if ((sub === 'test' || sub === 't' || sub === 'start') && !k.scripts.has(sub === 't' ? 'test' : sub)) problems.push(`${shown}: no "${sub}" script in package.json`);
        }
        // `npm start -- --config x`: the flags reach `chorus start`.
        const dashes = tokens.indexOf('--', at);
        if (sub === 'start' && dashes > 0) checkFlags(shown, tokens.slice(dashes + 1), k.cliOptions, 'chorus start');
      }
      const npx = tokens.indexOf('npx', i);
      if (npx >= 0 && tokens[npx + 1] && !tokens[npx + 1]!.startsWith('-') && !k.binaries.has(tokens[npx + 1]!)) {
        problems.push(`${shown}: npx ${tokens[npx + 1]} is not installed (node_modules/.bin)`);
      }
      let cli = tokens.findIndex((t, j) => t === 'node' && /^(\.\/)?bin\/chorus\.js$/.test(tokens[j + 1] ?? ''));
      if (cli >= 0) cli += 2;
      else if (tokens[i] === 'chorus') cli = i + 1;
      else continue;
      const cmd = tokens[cli];
      if (cmd === undefined || cmd.startsWith('-')) {
        checkFlags(shown, tokens.slice(cli), k.cliOptions, 'chorus');
      } else if (!k.cliCommands.has(cmd)) {
        problems.push(`${shown}: "${cmd}" is not a command of chorus (${[...k.cliCommands].join(', ')})`);
      } else if (cmd === 'init') {
        checkFlags(shown, tokens.slice(cli + 1), k.initFlags, 'chorus init (INIT_USAGE)');
      } else {
        checkFlags(shown, tokens.slice(cli + 1), k.cliOptions, `chorus ${cmd}`);
      }
    }
  }
  return problems;
}

/** Problems with the chat commands a text shows in code spans (`/group list`, `/ask …`). */
function chatCommandProblems(md: string, k: Known): string[] {
  const problems: string[] = [];
  for (const snippet of codeSnippets(md)) {
    const first = snippet.split(/\s+/)[0]!;
    if (!/^\/[a-zA-Z]+(@\w+)?$/.test(first)) continue; // not a command (a path such as /api/groups has more parts)
    if (BOTFATHER.has(first) || k.httpPaths(first)) continue;
    const cmd = parseCommand(snippet);
    if (!cmd) {
      problems.push(`${snippet}: ${first} is not a chat command`);
      continue;
    }
    if (cmd.name !== 'group') continue;
    const [sub, ...args] = cmd.args;
    if (sub === undefined || !/^[a-z]+$/.test(sub)) continue; // `/group`, or a placeholder
    if (!k.groupSubcommands.has(sub)) {
      problems.push(`${snippet}: "/group ${sub}" is not a subcommand (${[...k.groupSubcommands].join(', ')})`);
      continue;
    }
    if (['create', 'add', 'remove', 'mute', 'unmute'].includes(sub)) {
      for (const a of args) if (/^[a-z]+$/.test(a) && !k.agents.has(a)) problems.push(`${snippet}: "${a}" is not an agent that init sets up`);
    }
  }
  return problems;
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of withoutFences(md).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const text = m[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*_~](?=[^\w]|$)|(?<=^|[^\w])[`*_~]/g, '');
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Problems with the relative links of one Markdown file (path relative to the repository). */
function linkProblems(file: string, md: string, exists: (p: string) => boolean = (p) => existsSync(join(ROOT, p)), textOf: (p: string) => string = read): string[] {
  const problems: string[] = [];
  const text = withoutFences(md).replace(/(`+)[^`]+?\1(?!`)/g, 'code');
  for (const m of text.matchAll(/\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
    const [path = '', anchor] = target.split('#') as [string, string | undefined];
    const to = path ? relative(ROOT, resolve(join(ROOT, dirname(file)), decodeURIComponent(path))) : file;
    if (to.startsWith('..')) {
      problems.push(`${file}: ${target} points outside the repository`);
      continue;
    }
    if (!exists(to)) {
      problems.push(`${file}: ${target} — no file ${to}`);
      continue;
    }
    if (anchor && to.endsWith('.md') && !anchorsOf(to === file ? md : textOf(to)).has(anchor.toLowerCase())) {
      problems.push(`${file}: ${target} — no heading #${anchor} in ${to}`);
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------

describe('README.md', () => {
  const readme = read('README.md');
  const known = knownFromRepo();

  it('starts with the two commands and stays at most 300 lines', () => {
    const lines = readme.split('\n');
    const firstFence = lines.findIndex((l) => l.startsWith('```'));
    expect(lines.slice(0, firstFence).every((l) => l === '' || l.startsWith('# ')), 'only the title comes before the commands').toBe(true);
    expect(lines.slice(firstFence, firstFence + TOP.length)).toEqual(TOP);
    expect(readme.trimEnd().split('\n').length).toBeLessThanOrEqual(300);
  });

  it('reads what exists from the code (so the checks below have something to check against)', () => {
    expect([...known.cliCommands].sort()).toEqual(expect.arrayContaining(['check', 'doctor', 'init', 'start', 'status']));
    expect(known.cliOptions).toContain('--config');
    expect(known.initFlags).toEqual(expect.objectContaining({ size: expect.any(Number) }));
    expect(['--yes', '--telegram', '--discord-token', '--llm', '--api-key', '--base-url', '--model'].filter((f) => !known.initFlags.has(f))).toEqual([]);
    expect(known.groupSubcommands).toContain('create');
    expect(known.scripts).toContain('test');
  });

  it('shows only npm scripts, CLI commands and flags that exist', () => {
    expect(commandProblems(readme, known)).toEqual([]);
  });

  it('shows only chat commands that exist', () => {
    expect(chatCommandProblems(readme, known)).toEqual([]);
  });

  it('has a "Where the rest is documented" entry for every page in docs/', () => {
    const listed = new Set([...readme.matchAll(/\]\((docs\/[^)#\s]+\.md)/g)].map((m) => m[1]!));
    const pages = readdirSync(join(ROOT, 'docs')).filter((n) => n.endsWith('.md')).map((n) => `docs/${n}`);
    const section = readme.slice(readme.indexOf('## Where the rest is documented'));
    expect(readme).toContain('## Where the rest is documented');
    expect(pages.filter((p) => !section.includes(`](${p})`))).toEqual([]);
    expect(pages.filter((p) => !listed.has(p))).toEqual([]);
  });
});

describe('links', () => {
  const files = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((n) => n.endsWith('.md')).map((n) => `docs/${n}`)];
  it.each(files)('every relative link in %s resolves', (file) => {
    expect(linkProblems(file, read(file))).toEqual([]);
  });
});

describe('the checks catch what does not exist', () => {
  const known = knownFromRepo();
  const bad = [
    '# Chorus',
    '',
    '```sh',
    'npm run deploy                 # no such script',
    'npm check                      # a script, but not run like this',
    'node bin/chorus.js serve       # no such command',
    'node bin/chorus.js init --yes --telegram-token X \\',
    '  --llm anthropic',
    '```',
    '',
    'Run `chorus doctor --verbose`, `npx nothing-here` and `npm start -- --port 9`.',
    'In the chat: `/group pause analyst`, `/group create analyst editor`, `/pause`, and `/group list`.',
    'Send `/newbot` to BotFather; `/readyz` answers.',
    '[gone](docs/nowhere.md), [bad anchor](README.md#no-such-heading), [fine](#chorus), [web](https://example.com/x.md)',
  ].join('\n');

  it('a made-up script, npm command, CLI command, flag or binary', () => {
    const problems = commandProblems(bad, known);
    expect(problems).toEqual([
      expect.stringContaining('no script "deploy"'),
      expect.stringContaining('"npm check" is neither'),
      expect.stringContaining('"serve" is not a command'),
      expect.stringContaining('--telegram-token is not an option of chorus init'),
      expect.stringContaining('--verbose is not an option of chorus doctor'),
      expect.stringContaining('npx nothing-here is not installed'),
      expect.stringContaining('--port is not an option of chorus start'),
    ]);
  });

  it('a made-up chat command, /group subcommand or agent', () => {
    expect(chatCommandProblems(bad, known)).toEqual([
      expect.stringContaining('"/group pause" is not a subcommand'),
      expect.stringContaining('"editor" is not an agent'),
      expect.stringContaining('/pause is not a chat command'),
    ]);
  });

  it('a link to a missing file or heading', () => {
    expect(linkProblems('README.md', bad)).toEqual([
      expect.stringContaining('no file docs/nowhere.md'),
      expect.stringContaining('no heading #no-such-heading'),
    ]);
  });

  it('GitHub anchors for headings with code, punctuation and repeats', () => {
    const a = anchorsOf('# A local model (Ollama or llama.cpp)\n## Context windows (`context_tokens`)\n## What `chorus doctor` checks\n## Notes\n## Notes\n```sh\n# not a heading\n```\n');
    expect([...a]).toEqual(['a-local-model-ollama-or-llamacpp', 'context-windows-context_tokens', 'what-chorus-doctor-checks', 'notes', 'notes-1']);
  });
});
