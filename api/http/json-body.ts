import type { z } from 'zod';
import { HttpProblem } from './problem.ts';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Decodes a request body as strict UTF-8 JSON; 400 MALFORMED_JSON otherwise. */
export function parseJson(bytes: Uint8Array): unknown {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new HttpProblem(400, 'MALFORMED_JSON', 'The body is not valid UTF-8.');
  }
  if (text.trim() === '') throw new HttpProblem(400, 'MALFORMED_JSON', 'The body is empty; send a JSON object.');
  try {
    return JSON.parse(text);
  } catch (error) {
    const reason = error instanceof SyntaxError ? error.message : 'it is nested too deeply';
    throw new HttpProblem(400, 'MALFORMED_JSON', `The body is not valid JSON: ${reason}`);
  }
}

/** Validates input against a body schema; 422 VALIDATION_FAILED lists every issue by path. */
export function validate<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new HttpProblem(422, 'VALIDATION_FAILED', 'The body does not match the schema of this route.', {
    extra: {
      errors: result.error.issues.map((i) => ({ path: i.path.length ? `/${i.path.join('/')}` : '/', message: i.message })),
    },
  });
}
