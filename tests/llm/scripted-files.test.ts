/** The demo provider says what files it was shown, the same way every time. */
import { describe, expect, it } from 'vitest';
import type { LlmRequest } from '../../src/core/ports.js';
import type { AgentDef, ChatTurn } from '../../src/core/types.js';
import { ScriptedProvider } from '../../src/llm/ScriptedProvider.js';
import { file, pdf, png, turnWith } from './files.js';

const analyst: AgentDef = { id: 'analyst', name: 'Analyst', persona: 'You are Analyst, a sharp, numbers-first analyst.', model: null, avatar: null, color: null, aliases: [], talkativeness: 0.5 };
const p = new ScriptedProvider();
const ask = (turn: ChatTurn, mustReply = true, over: Partial<LlmRequest> = {}) =>
  p.complete({ purpose: 'turn', model: 'm', system: '', messages: [turn], agent: analyst, mustReply, ...over }).then((r) => r.text);

const chart = file(png(), 'image/png', 'chart.png', { width: 800, height: 600 });
const report = file(pdf(), 'application/pdf', 'report.pdf');

describe('ScriptedProvider: files', () => {
  it('acknowledges the files a turn carries in full, with an image’s size', async () => {
    const text = await ask(turnWith('@analyst what do you make of these?', chart.att, report.att));
    expect(text.startsWith('I can see chart.png (800×600) and report.pdf. ')).toBe(true);
    // The quoted question leaves the file lines out.
    expect(text).toContain('what do you make of these?');
    expect(text).not.toContain('[image:');
    expect(await ask(turnWith('@analyst what do you make of these?', chart.att, report.att))).toBe(text);
  });

  it('a message that is only a file gets a short acknowledgement', async () => {
    expect(await ask(turnWith('', chart.att))).toBe('I can see chart.png (800×600). (Analyst, canned demo reply)');
  });

  it('files named only by their lines are mentioned, not claimed as seen', async () => {
    const { attachments: _shown, ...linesOnly } = turnWith('@analyst thoughts?', chart.att);
    const text = await ask(linesOnly);
    expect(text.startsWith('I see you shared chart.png (800×600), though in demo mode I cannot open it. ')).toBe(true);
  });

  it('a voluntary turn still passes unless touched, whatever the file is called', async () => {
    const hello = file(png(50, 9), 'image/png', 'hello.png');
    expect(await ask(turnWith('lovely weather', hello.att), false)).toBe('[PASS]');
  });

  it('turns without files read as before', async () => {
    const text = await ask(turnWith('@analyst what about revenue?'));
    expect(text).not.toMatch(/I can see|you shared/);
    expect(text).toContain('what about revenue?');
  });
});
