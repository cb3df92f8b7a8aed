/**
 * Files through the core: a message with files is recorded with them (a photo without a caption
 * too), every agent reads each file's line, an agent that can see is sent the newest files in
 * full (its request reads their exact bytes), the session keeps them so the next turn's history
 * is sent the same way, the log gives them back, and images a tool returns go out with the reply.
 */
import { describe, expect, it } from 'vitest';
import { makeRouter, AGENTS_YAML } from '../helpers/router-harness.js';
import { MemoryTools, StepLlm } from '../helpers/tool-fakes.js';
import { samplePng, sha256, windowsExe } from '../helpers/sample-files.js';
import type { Attachment } from '../../src/core/fileTypes.js';
import type { LlmRequest } from '../../src/core/ports.js';
import type { ToolCallResult } from '../../src/core/toolPorts.js';

async function keep(h: Awaited<ReturnType<typeof makeRouter>>, name: string, bytes: Buffer): Promise<Attachment> {
  const kept = await h.router.files.keep({ name, bytes });
  if (!kept.ok) throw new Error(kept.reason);
  return kept.attachment;
}

const lastUser = (req: LlmRequest) => req.messages.at(-1)!;

describe('files in the core', () => {
  it('records a message that is only a photo, and the addressed agent that can see gets its bytes', async () => {
    const h = await makeRouter();
    const png = samplePng(40, 30);
    const chart = await keep(h, 'chart.png', png);
    expect(chart.id).toBe(sha256(png));
    const res = await h.say('', { attachments: [chart], replyToAgentId: 'analyst' });
    expect(res.status).toBe('recorded');
    const entry = h.transcript().find((e) => e.kind === 'human')!;
    expect(entry.attachments).toEqual([chart]);
    expect(entry.text).toBe('');

    const req = h.llm.callsFor('analyst')[0]!;
    const user = lastUser(req);
    expect(user.content).toContain('[image: chart.png');
    expect(user.attachments?.map((a) => [a.id, a.from])).toEqual([[chart.id, 'Maya']]);
    const read = await req.readFile!(chart.id);
    expect(sha256(read!.bytes)).toBe(sha256(png));
  });

  it('an empty message without files is still refused', async () => {
    const h = await makeRouter();
    const res = await h.say('   ');
    expect(res.status).toBe('rejected');
  });

  it('an agent whose model cannot see reads the line only', async () => {
    const yaml = AGENTS_YAML.replace('persona: "You analyse numbers.",', 'persona: "You analyse numbers.", vision: false,');
    const h = await makeRouter({ yaml });
    const chart = await keep(h, 'chart.png', samplePng(800, 600));
    await h.say('look @analyst', { attachments: [chart] });
    const user = lastUser(h.llm.callsFor('analyst')[0]!);
    expect(user.content).toMatch(/\[image: chart\.png, 800\u00d7600, \d+ (B|KB)\]/);
    expect(user.attachments).toBeUndefined();
  });

  it('only the newest files up to llm.max_images_in_prompt go in full; the others are lines', async () => {
    const h = await makeRouter({ maxImages: 2 });
    const files = [];
    for (let i = 0; i < 3; i++) files.push(await keep(h, `p${i}.png`, samplePng(10, 10, i)));
    await h.say('three @analyst', { attachments: files });
    const user = lastUser(h.llm.callsFor('analyst')[0]!);
    expect(user.attachments?.map((a) => a.name)).toEqual(['p1.png', 'p2.png']);
    for (const f of files) expect(user.content).toContain(`[image: ${f.name}`);
  });

  it('a history turn is sent again with the same files, and the log gives them back', async () => {
    const h = await makeRouter();
    const chart = await keep(h, 'chart.png', samplePng(12, 12));
    await h.say('@analyst what is this?', { attachments: [chart] });
    await h.say('@analyst and now?');
    const [first, second] = h.llm.callsFor('analyst');
    const before = lastUser(first!);
    const again = second!.messages.find((m) => m.role === 'user' && m.content === before.content)!;
    expect(again.attachments).toEqual(before.attachments);
    expect(lastUser(second!).attachments).toBeUndefined();
    expect(second!.readFile).toBeTypeOf('function');

    // A new router over the same log: the session and the entry come back with their files.
    await h.router.stop();
    const h2 = await makeRouter({ store: h.store });
    const session = h2.router.groups.get(h.group.id)!.sessions.get('analyst')!;
    expect(session.history.find((t) => t.attachments)?.attachments?.[0]?.id).toBe(chart.id);
    expect(h2.transcript().find((e) => e.attachments)?.attachments).toEqual([chart]);
  });

  it('the keeper refuses a Windows executable named .png and an oversized file', async () => {
    const h = await makeRouter();
    const exe = await h.router.files.keep({ name: 'cat.png', bytes: windowsExe() });
    expect(exe).toMatchObject({ ok: false, code: 'unsupported_type' });
    const big = await h.router.files.keep({ name: 'big.png', bytes: Buffer.alloc(h.router.files.maxBytes + 1) });
    expect(big).toMatchObject({ ok: false, code: 'too_large' });
    expect(h.store.files.size).toBe(0);
  });

  it('an image a tool returns is posted with the reply under the agent', async () => {
    const tools = new MemoryTools();
    const llm = new StepLlm([{ calls: [{ id: 'c1', name: 'orders__lookup', input: { id: 7 } }] }, 'Here is the chart.']);
    const h = await makeRouter({ llm, tools });
    const chart = await keep(h, 'orders.png', samplePng(20, 10));
    tools.call = async (): Promise<ToolCallResult> => ({ outcome: 'ok', content: '[image: orders.png]', bytes: 20, attachments: [chart] });
    await h.say('@analyst chart my orders');
    const reply = h.transcript().find((e) => e.kind === 'agent' && e.agentId === 'analyst')!;
    expect(reply.text).toBe('Here is the chart.');
    expect(reply.attachments).toEqual([chart]);
    const post = h.channel.posts.find((p) => p.agentId === 'analyst' && p.text === 'Here is the chart.')!;
    expect(post.files).toEqual([chart.id]);
  });
});
