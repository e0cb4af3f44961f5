import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let schema: Record<string, any>;
let descriptor: Record<string, any>;
beforeAll(async () => {
  server = await startServer();
  schema = await (await fetch(`${server.url}/schemas/property-descriptor.v1.json`)).json();
  descriptor = await (await fetch(`${server.url}/.well-known/property.json`)).json();
});
afterAll(async () => {
  await server.stop();
});

function validator() {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats.default(ajv);
  return ajv.compile(schema);
}

describe('property descriptor schema (spec 2.10)', () => {
  it('is JSON Schema 2020-12 with the required list, consts and no additionalProperties restriction', () => {
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect([...schema.required].sort()).toEqual(
      [
        'protocol',
        'protocolVersion',
        'id',
        'name',
        'canonicalUrl',
        'repository',
        'kind',
        'purpose',
        'owner',
        'partOf',
        'version',
        'aliases',
        'notSameAs',
        'relationships',
        'surfaces',
        'stateSources',
      ].sort(),
    );
    expect(schema.additionalProperties).toBeUndefined();
    expect(schema.properties.protocolVersion).toEqual({ const: 1 });
    expect(schema.properties.canonicalUrl).toMatchObject({ format: 'uri', pattern: '^https://' });
    expect(schema.properties.id.pattern).toMatch(/^\^[A-Z0-9]+-PROPERTY-\[A-Z0-9-\]\+\$$/);
  });

  it('accepts our own descriptor', () => {
    const validate = validator();
    expect(validate(descriptor), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...descriptor, extraField: 'allowed' })).toBe(true);
  });

  const broken: [string, (d: Record<string, any>) => void][] = [
    ['http canonicalUrl', (d) => (d.canonicalUrl = 'http://example.org/')],
    ['missing stateSources', (d) => delete d.stateSources],
    ['empty fields in a state source', (d) => (d.stateSources = [{ url: 'https://example.org/x', fields: [] }])],
    ['an empty field name', (d) => (d.stateSources = [{ url: 'https://example.org/x', fields: [''] }])],
    ['wrong id pattern', (d) => (d.id = 'OTHER-property-x')],
    ['protocolVersion 2', (d) => (d.protocolVersion = 2)],
    ['a relationship without name', (d) => (d.relationships = [{ type: 'x' }])],
    ['a surface without index', (d) => (d.surfaces = [{ url: 'https://example.org/', role: 'home' }])],
    ['a notSameAs that is no URI', (d) => (d.notSameAs = ['not a uri'])],
    ['another owner', (d) => (d.owner = 'someone-else')],
    ['an empty name', (d) => (d.name = '')],
  ];
  it.each(broken)('rejects a descriptor with %s', (_label, breakIt) => {
    const copy = structuredClone(descriptor);
    breakIt(copy);
    expect(validator()(copy)).toBe(false);
  });
});
