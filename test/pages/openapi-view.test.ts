import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exampleFor, fieldsOf, operationsOf } from '../../src/lib/openapi-view.ts';
import { TEST_DIST } from '../helpers/env.ts';

const doc = {
  openapi: '3.1.0',
  servers: [{ url: 'https://node.example' }],
  tags: [{ name: 'b' }, { name: 'a' }],
  paths: {
    '/things/{id}': {
      get: {
        tags: ['a'],
        summary: 'One thing',
        parameters: [
          { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' } },
        ],
        responses: {
          '200': {
            description: 'The thing',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } },
          },
          '404': {
            description: 'Not found',
            content: {
              'application/problem+json': {
                schema: { $ref: '#/components/schemas/Problem' },
                examples: { gone: { value: { code: 'THING_NOT_FOUND' } } },
              },
            },
          },
        },
      },
    },
    '/things': {
      post: {
        tags: ['b'],
        summary: 'Make a thing',
        security: [{ bearer: [] }],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/NewThing' } } },
        },
        responses: {
          '201': { description: 'Made' },
          '422': {
            description:
              'NAME_TOO_LONG: The name has more than 100 characters. VALIDATION_FAILED: The body fails the schema.',
            content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
            'x-problem-codes': ['VALIDATION_FAILED', 'NAME_TOO_LONG'],
          },
          '429': {
            description: 'Slow down',
            content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
          },
        },
      },
    },
  },
  components: {
    schemas: {
      NewThing: {
        type: 'object',
        required: ['name'],
        properties: {
          name: { type: 'string', minLength: 1, maxLength: 100, description: 'What to call it' },
          size: { type: 'integer', minimum: 1, maximum: 10, default: 3 },
          tags: { type: 'array', maxItems: 5, items: { type: 'string', enum: ['x', 'y'] } },
          owner: { type: 'object', properties: { email: { type: 'string', format: 'email' } }, required: ['email'] },
        },
      },
      Thing: {
        allOf: [
          { $ref: '#/components/schemas/NewThing' },
          { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
        ],
      },
      // A shared Problem lists every code: it says nothing about one answer's codes.
      Problem: {
        type: 'object',
        properties: { code: { type: 'string', enum: ['THING_NOT_FOUND', 'NAME_TOO_LONG', 'VALIDATION_FAILED'] } },
      },
    },
  },
};

describe('operationsOf', () => {
  const ops = operationsOf(doc);
  const post = ops.find((o) => o.method === 'POST')!;
  const get = ops.find((o) => o.method === 'GET')!;

  it('orders operations by the document tags and names each with an anchor', () => {
    expect(ops.map((o) => `${o.tag} ${o.method} ${o.path}`)).toEqual(['b POST /things', 'a GET /things/{id}']);
    expect(get.id).toBe('get-things-id');
  });

  it('lists every field with its type, whether required, its limits and its description, nested', () => {
    const fields = post.request!.fields;
    expect(fields.map((f) => [f.name, f.type, f.required])).toEqual([
      ['name', 'string', true],
      ['size', 'integer', false],
      ['tags', 'array of "x" | "y"', false],
      ['owner', 'object', false],
    ]);
    expect(fields[0]!.limits).toEqual(['at least 1 character', 'at most 100 characters']);
    expect(fields[0]!.description).toBe('What to call it');
    expect(fields[1]!.limits).toEqual(['≥ 1', '≤ 10', 'default 3']);
    expect(fields[3]!.children).toEqual([
      expect.objectContaining({ name: 'email', type: 'string (email)', required: true }),
    ]);
    // allOf merges the parts, refs resolved.
    expect(get.success[0]!.bodies[0]!.fields.map((f) => f.name)).toEqual(['name', 'size', 'tags', 'owner', 'id']);
  });

  it('makes an example from the schema when none is declared, and a curl call that sends it', () => {
    expect(post.request!.declaredExample).toBe(false);
    expect(post.request!.example).toEqual({
      name: 'string',
      size: 3,
      tags: ['x'],
      owner: { email: 'agent@example.com' },
    });
    expect(post.curl).toContain("curl -sS -X POST 'https://node.example/things'");
    expect(post.curl).toContain("-H 'Authorization: Bearer <token>'");
    expect(post.curl).toContain(`--data '${JSON.stringify(post.request!.example)}'`);
    expect(get.curl).toBe(`curl -sS 'https://node.example/things/sha256:${'0'.repeat(64)}'`);
  });

  it('collects problem codes from examples and x-problem-codes, explained one by one when the description does', () => {
    expect(get.problems).toEqual([
      { status: '404', description: 'Not found', codes: ['THING_NOT_FOUND'], explained: null },
    ]);
    expect(post.problems[0]).toMatchObject({
      status: '422',
      codes: ['VALIDATION_FAILED', 'NAME_TOO_LONG'],
      explained: [
        { code: 'VALIDATION_FAILED', text: 'The body fails the schema.' },
        { code: 'NAME_TOO_LONG', text: 'The name has more than 100 characters.' },
      ],
    });
    expect(post.problems[1]).toEqual({ status: '429', description: 'Slow down', codes: [], explained: null });
  });

  it('survives cycles and empty documents', () => {
    const loop = {
      components: {
        schemas: { Node: { type: 'object', properties: { next: { $ref: '#/components/schemas/Node' } } } },
      },
    };
    expect(fieldsOf(loop, { $ref: '#/components/schemas/Node' }).length).toBe(1);
    expect(exampleFor(loop, { $ref: '#/components/schemas/Node' })).toBeTypeOf('object');
    expect(operationsOf({})).toEqual([]);
  });
});

describe('/docs/api as built', () => {
  it('documents every operation of /openapi.json with its own section and a curl call', () => {
    const spec = JSON.parse(readFileSync(join(TEST_DIST, 'client/openapi.json'), 'utf8')) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const html = readFileSync(join(TEST_DIST, 'client/docs/api/index.html'), 'utf8');
    const ops = operationsOf(spec);
    expect(ops.length).toBe(Object.values(spec.paths).reduce((n, p) => n + Object.keys(p).length, 0));
    for (const op of ops) {
      const start = html.indexOf(`id="${op.id}"`);
      expect(start, op.id).toBeGreaterThan(0);
      const section = html.slice(start, html.indexOf('</section>', start));
      expect(section, op.id).toContain('curl -sS');
      if (op.request) expect(section, op.id).toContain('Request body');
    }
  });
});
