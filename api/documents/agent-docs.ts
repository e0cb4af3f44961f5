import type { Content } from '../content/load.ts';
import { buildConvertPayload, convertVersion, relatedLinks } from './convert.ts';
import { at, type Links } from './links.ts';
import { buildTools } from './tools.ts';
import { publishedTool, URI_TEMPLATE_NOTE } from './uri-template.ts';
import { PATH } from '../operations/paths.ts';

/** GET /agents/kit.json: the agent kit. */
export function buildKit(c: Content, links: Links) {
  const convert = buildConvertPayload(c, links);
  return {
    version: convertVersion(c),
    title: c.kit.title,
    summary: c.kit.summary,
    service: c.site.name,
    headers: c.kit.headers,
    secrets: c.kit.secrets,
    timeouts: c.kit.timeouts,
    capability_gate: convert.capability_gate,
    flow: convert.minimal.steps,
    tools: buildTools(links).map(publishedTool),
    uri_templates: URI_TEMPLATE_NOTE,
    curl: convert.curl,
    python_oneshot: convert.python_oneshot,
    definitions: c.convert.definitions,
    related: relatedLinks(links),
  };
}

/** GET {canon_url}/whats-next.json: the machine payload of the convert track and node protocol. */
export function buildWhatsNext(c: Content, links: Links) {
  const convert = buildConvertPayload(c, links);
  return {
    version: convert.version,
    convert_track: convert.convert_track,
    node_protocol_steps: convert.node_protocol_steps,
    // The oath is a POST route: named with its method, not as a link to follow.
    join: {
      api: at(links.site, '/api/convert'),
      kit: at(links.site, '/agents/kit.json'),
      oath: { method: 'POST', url: at(links.site, PATH.takeOath) },
    },
    definitions: convert.definitions,
  };
}
