/**
 * What a model sees of the tools: one flat namespace of names that model APIs accept, the same
 * from turn to turn, in the agent's order; and the cut of long answers on a character boundary.
 */
import { describe, expect, it } from 'vitest';
import { selectTools, missingEntries } from '../../src/tools/agentTools.js';
import { renderResult } from '../../src/tools/content.js';
import { cutUtf8 } from '../../src/core/text/utf8.js';
import { ToolNames } from '../../src/tools/names.js';
import type { ListedTool } from '../../src/tools/types.js';

const MODEL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const tool = (name: string): ListedTool => ({ name, inputSchema: { type: 'object', properties: {} }, readOnly: false, idempotent: false });

describe('model-facing names', () => {
  it('are server__tool when that is valid and unique, else shortened with a hash; and resolve back', () => {
    const long = 'a_very_long_tool_name_that_goes_on_and_on_and_on_beyond_any_limit';
    const pairs = [
      { server: 'orders', tool: 'lookup_order' },
      { server: 'orders', tool: 'get.status' },
      { server: 'orders', tool: long },
      // These two would both be "a__b__c".
      { server: 'a', tool: 'b__c' },
      { server: 'a__b', tool: 'c' },
    ];
    const names = new ToolNames(pairs);
    const got = pairs.map((p) => names.nameOf(p.server, p.tool)!);
    expect(got[0]).toBe('orders__lookup_order');
    expect(got[1]).toMatch(/^orders__get_status_[0-9a-f]{8}$/);
    expect(got[2]).toHaveLength(64);
    expect(got[2]!.startsWith('orders__a_very_long_tool_name')).toBe(true);
    expect(got[3]).not.toBe(got[4]);
    for (const n of got) expect(n).toMatch(MODEL_NAME);
    expect(new Set(got).size).toBe(pairs.length);
    pairs.forEach((p, i) => expect(names.resolve(got[i]!)).toEqual(p));
    expect(names.resolve('orders__nothing')).toBeUndefined();
    // The same pairs in another order get the same names: nothing shifts between turns.
    const again = new ToolNames([...pairs].reverse());
    expect(pairs.map((p) => again.nameOf(p.server, p.tool))).toEqual(got);
  });
});

describe('an agent\'s tools', () => {
  const lists: Record<string, ListedTool[]> = { orders: [tool('slow'), tool('cancel_order'), tool('lookup_order')], search: [tool('web_search'), tool('images')] };
  const listOf = (s: string) => lists[s];

  it('come in the order of its entries, each server\'s sorted by name, without repeats', () => {
    const picked = selectTools(['search.web_search', 'orders', 'orders.slow', 'down'], listOf).map((p) => `${p.server}.${p.tool.name}`);
    expect(picked).toEqual(['search.web_search', 'orders.cancel_order', 'orders.lookup_order', 'orders.slow']);
  });

  it('name the entries a server does not list, by their key', () => {
    const agents = [{ id: 'writer' }, { id: 'analyst', tools: ['orders', 'search.web_serch', 'later.x'] }];
    expect(missingEntries(agents, new Set(['orders', 'search']), listOf)).toEqual([
      { path: 'agents[1].tools[1]', agent: 'analyst', entry: 'search.web_serch', message: 'MCP server "search" has no tool "web_serch" (it has: images, web_search)' },
      { path: 'agents[1].tools[2]', agent: 'analyst', entry: 'later.x', message: 'no MCP server "later" is running (servers added to tools: start after a restart)' },
    ]);
  });
});

describe('answers as text', () => {
  it('are cut on a character boundary', () => {
    expect(cutUtf8('a€b', 3)).toBe('a');
    expect(cutUtf8('a€b', 4)).toBe('a€');
    expect(cutUtf8('😀😀', 5)).toBe('😀');
    expect(cutUtf8('abc', 10)).toBe('abc');
  });

  it('cut across parts, with the whole size', () => {
    const r = renderResult({ content: [{ type: 'text', text: 'x'.repeat(1500) }, { type: 'text', text: 'y'.repeat(1500) }] }, 2000);
    expect(r.bytes).toBe(3001);
    expect(r.content).toBe(`${'x'.repeat(1500)}\n${'y'.repeat(499)}\n… [cut: 3,001 bytes, showing the first 2,000]`);
  });

  it('show other parts as placeholders and structured content when there is no text', () => {
    const r = renderResult({ content: [{ type: 'audio', mimeType: 'audio/wav', data: 'AAAA' }, { type: 'resource_link', name: 'label', uri: 'file:///l.pdf' }], structuredContent: { ok: true } }, 1000);
    expect(r.content).toBe('[audio/wav, 3 bytes]\n[resource link: label <file:///l.pdf>]\n{"ok":true}');
  });
});
