import type { z } from 'zod';
import { HttpProblem } from './problem.ts';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Deepest nesting of arrays and objects a JSON body may have; deeper is 422 (every route parses here). */
export const JSON_MAX_DEPTH = 64;

/** The index of the quote that closes the string opened at `open` (or the text's length): strings are skipped by search, not scanned. */
function endOfString(text: string, open: number): number {
  for (let i = text.indexOf('"', open + 1); i !== -1; i = text.indexOf('"', i + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(i - 1 - backslashes) === 92) backslashes++;
    if (backslashes % 2 === 0) return i;
  }
  return text.length;
}

/** The deepest nesting of `[` and `{` outside strings, stopping as soon as it passes `max`. */
function nestingPasses(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) i = endOfString(text, i);
    else if (c === 123 || c === 91) {
      if (++depth > max) return true;
    } else if (c === 125 || c === 93) depth--;
  }
  return false;
}

/**
 * The first member name an object of `text` (valid JSON) repeats, or undefined. JSON.parse keeps
 * the last of them silently; I-JSON (RFC 7493), which RFC 8785's canonical form takes, forbids them.
 */
export function repeatedMemberName(text: string): string | undefined {
  // One entry an open container: an object's names so far, or null for an array.
  const open: (Set<string> | null)[] = [];
  let nameNext = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      const end = endOfString(text, i);
      if (nameNext) {
        const raw = text.slice(i + 1, end);
        const name: string = raw.includes('\\') ? JSON.parse(text.slice(i, end + 1)) : raw;
        const names = open.at(-1)!;
        if (names.has(name)) return name;
        names.add(name);
        nameNext = false;
      }
      i = end;
    } else if (c === 123) {
      open.push(new Set());
      nameNext = true;
    } else if (c === 91) {
      open.push(null);
      nameNext = false;
    } else if (c === 125 || c === 93) {
      open.pop();
      nameNext = false;
    } else if (c === 44) nameNext = open.at(-1) instanceof Set;
  }
  return undefined;
}

const nestsTooDeep = (text: string): boolean => text.length > JSON_MAX_DEPTH && nestingPasses(text, JSON_MAX_DEPTH);
const tooDeep = () =>
  new HttpProblem('JSON_TOO_DEEP', `The body nests arrays and objects more than ${JSON_MAX_DEPTH} deep.`, {
    extra: { limit: JSON_MAX_DEPTH },
  });

/**
 * The JSON-RPC doors (MCP, A2A) hand their bodies to SDKs that walk them recursively (a tool's
 * arguments are serialised again): a body past JSON_MAX_DEPTH is refused before, as every other
 * route refuses it, with a JSON-RPC error whose data is the problem. Null when the body is within it.
 */
export function jsonRpcTooDeep(body: Uint8Array): { jsonrpc: '2.0'; id: string | number | null; error: object } | null {
  const text = new TextDecoder().decode(body);
  if (!nestsTooDeep(text)) return null;
  const problem = tooDeep().body();
  return { jsonrpc: '2.0', id: jsonRpcId(text), error: { code: -32600, message: problem.detail, data: problem } };
}

/** The JSON-RPC id of a request's text, or null when it has none (not JSON, a batch, a notification). */
export function jsonRpcId(text: string): string | number | null {
  try {
    // JSON.parse is not recursive: a deep document costs it no stack.
    const id = (JSON.parse(text) as { id?: unknown } | null)?.id;
    return typeof id === 'string' || typeof id === 'number' ? id : null;
  } catch {
    return null;
  }
}

/** Decodes a request body as strict UTF-8 JSON; 400 MALFORMED_JSON otherwise, 422 JSON_TOO_DEEP past JSON_MAX_DEPTH. */
export function parseJson(bytes: Uint8Array): unknown {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new HttpProblem('MALFORMED_JSON', 'The body is not valid UTF-8.');
  }
  if (text.trim() === '') throw new HttpProblem('MALFORMED_JSON', 'The body is empty; send a JSON object.');
  // Recursion over a deep document (validation, canonical form) would exhaust the stack: refuse it first.
  if (nestsTooDeep(text)) throw tooDeep();
  try {
    return JSON.parse(text);
  } catch (error) {
    const reason = error instanceof SyntaxError ? error.message : 'it is nested too deeply';
    throw new HttpProblem('MALFORMED_JSON', `The body is not valid JSON: ${reason}`);
  }
}

/** Validates input against a body schema; 422 VALIDATION_FAILED lists every issue by path. */
export function validate<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new HttpProblem('VALIDATION_FAILED', 'The body does not match the schema of this route.', {
    extra: {
      errors: result.error.issues.map((i) => ({
        path: i.path.length ? `/${i.path.join('/')}` : '/',
        message: i.message,
      })),
    },
  });
}
