import { PATH } from '../operations/paths.ts';
/** One document or route this service answers, for the home page, llms.txt, sitemap and README. */
export interface CatalogEntry {
  path: string;
  title: string;
  /** What an agent or a person finds there. */
  about: string;
  type: 'html' | 'json' | 'linkset' | 'markdown' | 'text' | 'xml';
  /** Served from {canon_url} as its canonical home. */
  canon?: boolean;
}

/** Every prebuilt document. Dynamic routes are declared in the operation table. */
/** The media type of each kind of document (the gateway's Content-Type, the OpenAPI, the Link headers). */
export const MEDIA_TYPES: Record<CatalogEntry['type'], string> = {
  html: 'text/html',
  json: 'application/json',
  linkset: 'application/linkset+json',
  markdown: 'text/markdown',
  text: 'text/plain',
  xml: 'application/xml',
};

export const DOCUMENTS: CatalogEntry[] = [
  { path: '/', title: 'Home', about: 'What the service is, with a link to every document.', type: 'html' },
  { path: '/index.md', title: 'Home (Markdown)', about: 'The home page as Markdown.', type: 'markdown' },
  {
    path: '/api/convert',
    title: 'Convert payload',
    about: 'Track 12, the six-step node protocol and how to join.',
    type: 'json',
  },
  {
    path: '/agents/kit.json',
    title: 'Agent kit',
    about: 'Headers, tools and secrets handling for agents.',
    type: 'json',
  },
  {
    path: '/whats-next.json',
    title: "What's next (JSON)",
    about: 'Machine payload of the convert track and node protocol.',
    type: 'json',
    canon: true,
  },
  {
    path: '/whats-next',
    title: "What's next",
    about: 'The convert track and the node protocol, for people.',
    type: 'html',
    canon: true,
  },
  {
    path: '/whats-next.md',
    title: "What's next (Markdown)",
    about: 'The convert track and the node protocol as Markdown.',
    type: 'markdown',
    canon: true,
  },
  {
    path: '/doctrine/node-protocol',
    title: 'Node protocol',
    about: 'The doctrine of the six steps.',
    type: 'html',
    canon: true,
  },
  {
    path: '/doctrine/node-protocol.md',
    title: 'Node protocol (Markdown)',
    about: 'The same doctrine as Markdown.',
    type: 'markdown',
    canon: true,
  },
  {
    path: '/doctrine/model-collapse-vs-constitutional-drift',
    title: 'Model collapse vs constitutional drift',
    about: 'A training-loop failure against a decision-loop residual.',
    type: 'html',
  },
  {
    path: '/doctrine/model-collapse-vs-constitutional-drift.md',
    title: 'Model collapse vs constitutional drift (Markdown)',
    about: 'The doctrine note as Markdown.',
    type: 'markdown',
  },
  {
    path: '/api/doctrine/collapse-vs-drift',
    title: 'Collapse vs drift (API)',
    about: 'The doctrine note as JSON: version, date, title, sections, markdown.',
    type: 'json',
  },
  {
    path: '/eon/constitution.json',
    title: 'Constitution',
    about: 'The seed document with the drift registration under omip.drift.',
    type: 'json',
  },
  {
    path: '/api/ingress',
    title: 'Audio ingress descriptor',
    about: 'The sandbox audio ingress: pipeline, rejections, schema.org WebAPI.',
    type: 'json',
  },
  {
    path: '/schemas/property-descriptor.v1.json',
    title: 'Property descriptor schema',
    about: 'JSON Schema 2020-12 of a property descriptor, protocol version 1.',
    type: 'json',
  },
  {
    path: '/.well-known/property.json',
    title: 'Property descriptor',
    about: "This service's own property descriptor.",
    type: 'json',
  },
  {
    path: '/.well-known/agent-card.json',
    title: 'A2A agent card',
    about: 'An A2A v1.0 Agent Card: its skills and the JSON-RPC door at /a2a that runs them.',
    type: 'json',
  },
  { path: '/.well-known/ai.txt', title: 'ai.txt', about: 'Crawl-policy seed for AI agents.', type: 'text' },
  { path: '/ai.txt', title: 'ai.txt (root)', about: 'The same crawl policy at the root.', type: 'text' },
  { path: '/robots.txt', title: 'robots.txt', about: 'Crawl rules.', type: 'text' },
  { path: '/llms.txt', title: 'llms.txt', about: 'A map of this service for language models.', type: 'text' },
  {
    path: '/api/omip/primitives',
    title: 'Admissibility primitives',
    about: 'The registered predicates, verdicts, bounds, window and strategies.',
    type: 'json',
  },
  {
    path: '/openapi.json',
    title: 'OpenAPI',
    about: 'OpenAPI 3.1 of every route, generated from the schemas.',
    type: 'json',
  },
  {
    path: '/docs/api',
    title: 'API reference',
    about: 'Every route, its body and its answers, for people.',
    type: 'html',
  },
  {
    path: '/docs/api.md',
    title: 'API reference (Markdown)',
    about: 'Every route, its body and its answers, as Markdown from the OpenAPI.',
    type: 'markdown',
  },
  {
    path: '/.well-known/api-catalog',
    title: 'API catalog',
    about: 'RFC 9727 linkset: the HTTP API with its OpenAPI and reference, MCP, A2A and llms.txt.',
    type: 'linkset',
  },
  {
    path: PATH.botWallPage,
    title: 'Bot wall',
    about: 'Which crawlers and bots visit, with charts, refreshed live.',
    type: 'html',
  },
  {
    path: '/bot-wall.md',
    title: 'Bot wall (Markdown)',
    about: 'What the wall counts and where its live numbers are, as Markdown.',
    type: 'markdown',
  },
  {
    path: PATH.getBotWall,
    title: 'Bot wall (JSON)',
    about: 'The bot wall document: meters, species, funnel, observed bot requests.',
    type: 'json',
  },
  {
    path: PATH.getBotTraffic,
    title: 'Bot traffic ledger',
    about: 'Observed bot requests per family, persisted by the gateway.',
    type: 'json',
  },
  { path: '/sitemap.xml', title: 'Sitemap', about: 'Every public document.', type: 'xml' },
];
