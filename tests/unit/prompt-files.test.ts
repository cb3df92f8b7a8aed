/**
 * Which files a prompt carries in full, decided by the fit: plain text goes to every agent, images
 * and PDFs only to one that can see; files take room from old history before the newest files give
 * way; a file that does not fit stays its line; and the tokens files are estimated at are left out
 * when the units-per-token ratio is learned from a call's usage.
 */
import { describe, expect, it } from 'vitest';
import { fitPrompt, type PromptParts } from '../../src/core/session/fitPrompt.js';
import { ContextBudgets } from '../../src/core/session/contextBudget.js';
import { fileTokens } from '../../src/core/session/promptFiles.js';
import type { Attachment } from '../../src/core/fileTypes.js';
import type { ChatTurn, TranscriptEntry } from '../../src/core/types.js';

const file = (n: number, type: Attachment['type'], size = 2000, dims?: [number, number]): Attachment => ({
  id: `${n}`.padStart(64, '0'),
  sha256: `${n}`.padStart(64, '0'),
  name: `f${n}`,
  type,
  size,
  ...(dims ? { width: dims[0], height: dims[1] } : {}),
});

const entry = (seq: number, attachments: Attachment[], text = 'see'): TranscriptEntry => ({ id: `e${seq}`, seq, kind: 'human', ts: seq, authorId: 'web:maya', authorName: 'Maya', text, attachments });

const count = (t: string) => Math.ceil(t.length / 4) + 4;

function parts(observations: TranscriptEntry[], files: PromptParts['files'], history: ChatTurn[] = []): PromptParts {
  return { system: 'You are a test.', summary: null, history, observations, omitted: 0, ask: { kind: 'addressed', by: 'Maya' }, files };
}

describe('files in the fitted prompt', () => {
  it('a plain-text file goes in full to an agent that cannot see; its image stays a line', () => {
    const text = file(1, 'text/plain', 300);
    const image = file(2, 'image/png', 5000, [200, 100]);
    const p = fitPrompt(parts([entry(1, [text, image])], { vision: false, max: 4 }), 100_000, 256, count, 4);
    expect(p.userFiles.map((f) => f.id)).toEqual([text.id]);
    expect(p.userTurn).toContain('[image: f2, 200\u00d7100, 5 KB]');
    expect(p.userTurn).toContain('[text file: f1, 300 B]');
    expect(p.fileTokens).toBe(fileTokens(text));
  });

  it('the newest file that does not fit the room is left as its line; an older, smaller one still goes', () => {
    const small = file(1, 'image/png', 1000, [100, 100]); // 14 tokens
    const big = file(2, 'image/png', 9000, [2000, 2000]); // 1600 tokens
    const p = fitPrompt(parts([entry(1, [small]), entry(2, [big])], { vision: true, max: 4 }), 400, 64, count, 4);
    expect(p.files).toEqual([small.id]);
    expect(p.estimatedTokens).toBeLessThanOrEqual(400);
  });

  it("the newest files take the room before old history: a history turn's text gives way first", () => {
    const image = file(3, 'image/png', 1000, [600, 600]); // 480 tokens
    const history: ChatTurn[] = [
      { role: 'user', content: 'x'.repeat(1200) },
      { role: 'assistant', content: 'y'.repeat(1200) },
    ];
    const p = fitPrompt(parts([entry(5, [image])], { vision: true, max: 4 }, history), 800, 64, count, 4);
    expect(p.files).toEqual([image.id]);
    expect(p.droppedHistory).toBe(2);
  });

  it('without an allowance (or max 0) nothing is sent in full and history turns are sent as words', () => {
    const image = file(4, 'image/png', 1000, [10, 10]);
    const history: ChatTurn[] = [
      { role: 'user', content: 'earlier', attachments: [{ ...image, from: 'Maya' }] },
      { role: 'assistant', content: 'ok' },
    ];
    for (const allow of [undefined, { vision: true, max: 0 }]) {
      const p = fitPrompt(parts([entry(6, [image])], allow, history), 100_000, 256, count, 4);
      expect(p.files).toEqual([]);
      expect(p.messages.every((m) => !m.attachments)).toBe(true);
    }
  });

  it("calibration takes the files' estimated tokens off the reported usage", () => {
    const a = new ContextBudgets({ defaultContextTokens: 100_000 });
    const b = new ContextBudgets({ defaultContextTokens: 100_000 });
    const usage = { inputTokens: 1000 + 1600, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
    const withFile = a.learn('m', { units: 4500, messageCount: 1, fileTokens: 1600 }, usage);
    const textOnly = b.learn('m', { units: 4500, messageCount: 1 }, { ...usage, inputTokens: 1000 });
    expect(withFile).toBeCloseTo(textOnly!, 6);
  });
});
