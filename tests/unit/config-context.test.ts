/**
 * Configuring the context budget: `context_tokens` (per agent and under `llm`), the summary model's
 * default per provider, and what `chorus check` warns about.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { DEFAULT_SUMMARY_MODEL, summaryModelOf } from '../../src/config/schema.js';
import { agentsFromConfig } from '../../src/app.js';
import { configWarnings } from '../../src/ops/configWarnings.js';

const AGENTS = 'agents:\n  - { id: analyst, name: Analyst, persona: p, context_tokens: 2048 }\n  - { id: writer, name: Writer, persona: p }\n';

function problems(yaml: string): string[] {
  try {
    parseConfigText(yaml, 'test', {});
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map((p) => `${p.path}: ${p.message}`);
    throw err;
  }
  return [];
}

describe('context_tokens', () => {
  it('is read per agent and under llm, and reaches the core', () => {
    const { config } = parseConfigText(`llm: { provider: openai, base_url: "http://127.0.0.1:1/v1", model: llama3.1, context_tokens: 8192 }\n${AGENTS}`, 'test', {});
    expect(config.llm.context_tokens).toBe(8192);
    expect(agentsFromConfig(config).map((a) => a.contextTokens)).toEqual([2048, null]);
  });

  it('bad values name their key', () => {
    expect(problems(`llm: { context_tokens: 100 }\n${AGENTS}`)).toEqual(['llm.context_tokens: must be at least 512']);
    expect(problems(`llm: { context_tokens: "lots" }\n${AGENTS}`)).toEqual(['llm.context_tokens: expected number, got "lots"']);
    expect(problems('agents:\n  - { id: a, name: A, persona: p, context_tokens: 1.5 }\n')[0]).toMatch(/^agents\[0\]\.context_tokens: /);
    expect(problems(`llm: { context_token: 4096 }\n${AGENTS}`)).toEqual(['llm.context_token: unknown key (did you mean "context_tokens"?)']);
  });
});

describe('summary model', () => {
  it('defaults to the Anthropic summary model for anthropic, to each agent\'s own model for openai', () => {
    const anthropic = parseConfigText(`llm: { provider: anthropic }\n${AGENTS}`, 'test', {}).config;
    expect(summaryModelOf(anthropic.llm)).toBe(DEFAULT_SUMMARY_MODEL);
    const openai = parseConfigText(`llm: { provider: openai, model: llama3.1 }\n${AGENTS}`, 'test', {}).config;
    expect(summaryModelOf(openai.llm)).toBeNull();
    const chosen = parseConfigText(`llm: { provider: openai, model: llama3.1, summary_model: qwen2.5 }\n${AGENTS}`, 'test', {}).config;
    expect(summaryModelOf(chosen.llm)).toBe('qwen2.5');
  });

  it('check warns about an Anthropic summary model with provider openai, and says which window it assumes', () => {
    const { config } = parseConfigText(`llm: { provider: openai, model: llama3.1, summary_model: claude-haiku-4-5 }\n${AGENTS}`, 'test', {});
    const w = configWarnings(config);
    expect(w).toContainEqual(expect.objectContaining({ level: 'warn', subject: 'llm.summary_model', fix: expect.stringMatching(/remove llm\.summary_model/) }));
    expect(w).toContainEqual(expect.objectContaining({ level: 'info', subject: 'context window', text: expect.stringMatching(/^assumed 4096 tokens for llama3\.1/) }));
    // A consistent config has no warnings.
    const fine = parseConfigText(`llm: { provider: openai, model: llama3.1, context_tokens: 8192, max_tokens: 512 }\n${AGENTS.replace('2048', '4096')}`, 'test', {}).config;
    expect(configWarnings(fine).filter((f) => f.level === 'warn')).toEqual([]);
  });

  it('`chorus check` prints the warning', () => {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-check-'));
    try {
      const file = join(dir, 'config.yaml');
      writeFileSync(file, `llm: { provider: openai, base_url: "http://127.0.0.1:9/v1", model: llama3.1, summary_model: claude-haiku-4-5, context_tokens: 4096 }\n${AGENTS}`);
      const root = resolve(import.meta.dirname, '../..');
      const r = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'src/main.ts'), 'check', '--config', file], { cwd: root, encoding: 'utf8', timeout: 60_000 });
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^! llm\.summary_model: "claude-haiku-4-5" is an Anthropic model name, but llm\.provider is openai.* — fix: remove llm\.summary_model/m);
      expect(r.stdout).toContain('summaries claude-haiku-4-5');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
