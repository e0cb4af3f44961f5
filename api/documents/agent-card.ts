import type { Content } from '../content/load.ts';
import { buildTools } from './tools.ts';
import { at, type Links } from './links.ts';

/**
 * /.well-known/agent-card.json: an A2A v1.0 Agent Card. The service is not an A2A task server; its
 * interfaces are its HTTP+JSON routes and its MCP endpoint, and its skills are the convert tools.
 */
export function buildAgentCard(c: Content, links: Links) {
  const skill = (id: string, name: string, description: string, tags: string[], examples: string[]) => ({
    id,
    name,
    description,
    tags,
    examples,
    inputModes: ['application/json'],
    outputModes: ['application/json'],
    securityRequirements: [],
  });
  const tools = buildTools(links);
  return {
    name: c.site.name,
    description: c.site.description,
    supportedInterfaces: [
      { url: at(links.site, '/api'), protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: '' },
      { url: at(links.site, '/mcp'), protocolBinding: 'MCP', protocolVersion: '2025-11-25', tenant: '' },
    ],
    provider: { organization: c.site.name, url: at(links.site, '/') },
    version: c.site.versionDate,
    documentationUrl: at(links.site, '/docs/api'),
    capabilities: { streaming: false, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['application/json'],
    // One skill per tool of the registry, so the card lists what the convert payload and /mcp list.
    skills: tools.map((t) => skill(t.name, t.name.replaceAll('_', ' '), t.description, [t.method === 'GET' ? 'read' : 'write', t.url.includes('/omip/') ? 'omip' : 'convert'], [`${t.method} ${t.url}`])),
    signatures: [],
  };
}
