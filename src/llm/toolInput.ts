/**
 * The arguments of a tool call as the model wrote them (a JSON text, streamed in pieces), made
 * into the object `ToolCall.input` promises.
 */

/**
 * The key under which arguments that are not a JSON object are handed on, as the model wrote them.
 *
 * Why not throw, or pass `{}`: a model that writes broken arguments has still made a call, and the
 * other calls of its reply (and its text) are good. Failing the whole reply would lose them and
 * make the turn retry for a slip the model can correct; `{}` would hide the slip and run the tool
 * with no arguments. With the text kept under this key the call goes through the normal path: the
 * tool refuses arguments it does not know (its input schema has no such key), the model is told so
 * in the tool result and sees its own text in the call it is sent back, and the caller can tell
 * such a call by this key.
 */
export const INVALID_JSON_KEY = '_invalid_json';

/**
 * The arguments as an object: `{}` for none (an empty text or `null`, as tools without
 * parameters are called), the parsed object, or `{ _invalid_json: raw }` for anything else
 * (text that does not parse, an array, a string, a number).
 */
export function parseToolInput(raw: string): Record<string, unknown> {
  if (!raw.trim()) return {};
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { [INVALID_JSON_KEY]: raw };
  }
  if (value === null) return {};
  return isObject(value) ? value : { [INVALID_JSON_KEY]: raw };
}

/** An input that arrived already parsed (a whole, non-streamed reply): kept when it is an object. */
export function toolInputOf(value: unknown): Record<string, unknown> {
  if (value === null || value === undefined) return {};
  if (isObject(value)) return value;
  return { [INVALID_JSON_KEY]: typeof value === 'string' ? value : JSON.stringify(value) };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
