import { z } from 'zod';

/**
 * Names and examples of the request and response schemas, for OpenAPI and the 405 examples. Kept
 * apart from zod's global registry so other consumers (the MCP SDK) see each schema inline.
 */
export const apiSchemas = z.registry<{ id: string; examples?: unknown[] }>();
