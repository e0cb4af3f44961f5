import { serve } from '../lib/route.ts';

export const prerender = false;
export const ALL = serve('mcp');
