#!/usr/bin/env node
/**
 * A small MCP server for trying tools in Chorus without any network: an order book kept in a JSON
 * file. `lookup_order` only reads (annotated readOnlyHint, so it runs without asking anyone);
 * `cancel_order` changes the book (no hints, so with `confirm: auto` a person must approve it).
 *
 *   tools:
 *     orders:
 *       command: node
 *       args: [examples/mcp/orders.mjs]
 *       env: { ORDERS_FILE: ./data/orders.json }
 *
 * Speaks MCP over stdio (Chorus starts and supervises it); logs go to stderr.
 */
import { existsSync, readFileSync, renameSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const FILE = process.env.ORDERS_FILE ?? './data/orders.json';
const SAMPLE = {
  '1001': { item: 'Espresso machine', status: 'shipped', eta: 'Thursday' },
  '1002': { item: 'Coffee grinder', status: 'processing', eta: 'next week' },
  '1003': { item: 'Milk jug', status: 'delivered', eta: null },
};

function load() {
  if (!existsSync(FILE)) return structuredClone(SAMPLE);
  return JSON.parse(readFileSync(FILE, 'utf8'));
}

function save(book) {
  mkdirSync(dirname(FILE), { recursive: true });
  writeFileSync(`${FILE}.tmp`, JSON.stringify(book, null, 2));
  // A rename is atomic: a crash leaves the old book or the new one, never half of one.
  renameSync(`${FILE}.tmp`, FILE);
}

const server = new McpServer({ name: 'chorus-example-orders', version: '1.0.0' });

server.registerTool(
  'lookup_order',
  {
    description: 'Look up an order by its number: the item, its status and when it should arrive.',
    inputSchema: { id: z.string().describe('The order number, e.g. 1001') },
    annotations: { readOnlyHint: true },
  },
  async ({ id }) => {
    const order = load()[id];
    if (!order) return { isError: true, content: [{ type: 'text', text: `No order ${id}.` }] };
    return { content: [{ type: 'text', text: `Order ${id}: ${order.item}, ${order.status}${order.eta ? `, expected ${order.eta}` : ''}.` }] };
  },
);

server.registerTool(
  'cancel_order',
  {
    description: 'Cancel an order that has not been delivered yet. This changes the order book.',
    inputSchema: { id: z.string().describe('The order number'), reason: z.string().optional() },
  },
  async ({ id, reason }) => {
    const book = load();
    const order = book[id];
    if (!order) return { isError: true, content: [{ type: 'text', text: `No order ${id}.` }] };
    if (order.status === 'delivered') return { isError: true, content: [{ type: 'text', text: `Order ${id} was already delivered.` }] };
    order.status = 'cancelled';
    order.reason = reason ?? null;
    save(book);
    return { content: [{ type: 'text', text: `Order ${id} (${order.item}) is cancelled.` }] };
  },
);

await server.connect(new StdioServerTransport());
console.error(`orders example: serving ${FILE}`);
