import { z } from 'zod';
import { TOOL_OPERATIONS } from '../operations/paths.ts';
import { toolInput } from '../operations/invoke.ts';
import { at, type Links } from './links.ts';

/** A tool as the convert payload and the kit list it (made from the operation table). */
export interface ToolDescriptor {
  name: string;
  description: string;
  method: 'GET' | 'POST';
  url: string;
  headers?: Record<string, string>;
  input_schema?: object;
}

/** The headers an agent sends with a tool's HTTP call. */
function headersOf(op: (typeof TOOL_OPERATIONS)[number]): Record<string, string> | undefined {
  if (op.method !== 'POST') return undefined;
  const json = { 'Content-Type': 'application/json' };
  return op.credentials === 'passport-optional' || op.credentials === 'passport'
    ? { ...json, Authorization: 'Bearer <passportNumber>' }
    : json;
}

/** The tools (the operations the table offers as tools, in their order) with absolute URLs and input JSON Schemas. */
export function buildTools(links: Links): ToolDescriptor[] {
  return TOOL_OPERATIONS.filter((op) => op.tool!.mcp).map((op) => {
    const input = toolInput(op);
    const headers = headersOf(op);
    return {
      name: op.tool!.name,
      description: op.tool!.description,
      method: op.method,
      url: at(op.tool!.canon ? links.canon : links.site, op.path),
      ...(headers ? { headers } : {}),
      ...(input ? { input_schema: z.toJSONSchema(input, { io: 'input' }) } : {}),
    };
  });
}
