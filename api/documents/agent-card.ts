import type { Content } from '../content/load.ts';
import { PATH, TOOL_OPERATIONS } from '../operations/paths.ts';
import { toolInput } from '../operations/invoke.ts';
import { exampleOf } from '../http/route.ts';
import { at, type Links } from './links.ts';

/**
 * /.well-known/agent-card.json: an A2A v1.0 Agent Card. Its one interface is the A2A JSON-RPC door
 * (POST /a2a, api/a2a/a2a.ts); its skills are the operations the table offers as A2A skills, each
 * run by a message whose DataPart is `{"skill": id, "arguments": {...}}`.
 */
export function buildAgentCard(c: Content, links: Links) {
  const skills = TOOL_OPERATIONS.filter((op) => op.tool!.a2a).map((op) => {
    const input = toolInput(op);
    const example = { skill: op.tool!.name, arguments: op.method === 'POST' && op.body ? exampleOf(op.body) : {} };
    return {
      id: op.tool!.name,
      name: op.tool!.name.replaceAll('_', ' '),
      description: `${op.tool!.description} Send a DataPart ${JSON.stringify({ skill: op.tool!.name, arguments: input ? '{...}' : {} })}; the same as ${op.method} ${at(links.site, op.path)}.${op.idempotency ? ' To retry it safely, send the same idempotencyKey argument (a random UUID v4) each time.' : ''}`,
      tags: [op.method === 'GET' ? 'read' : 'write', op.tag],
      examples: [JSON.stringify(example)],
      inputModes: ['application/json', 'text/plain'],
      outputModes: ['application/json', 'text/plain'],
      securityRequirements: [],
    };
  });
  return {
    name: c.site.name,
    description: c.site.description,
    // One door, two versions: v1.0, and v0.3 (`message/send`) for requests without A2A-Version.
    supportedInterfaces: ['1.0', '0.3'].map((protocolVersion) => ({
      url: at(links.site, PATH.a2a),
      protocolBinding: 'JSONRPC',
      protocolVersion,
      tenant: '',
    })),
    provider: { organization: c.site.name, url: at(links.site, '/') },
    version: c.site.versionDate,
    documentationUrl: at(links.site, '/docs/api'),
    capabilities: { streaming: false, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['application/json', 'text/plain'],
    defaultOutputModes: ['application/json', 'text/plain'],
    skills,
    signatures: [],
  };
}
