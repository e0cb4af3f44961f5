/**
 * From an OpenAPI 3.1 document to what the API reference shows: operations, their fields one by
 * one, an example of every body, problem codes and a ready curl call. Reads only what OpenAPI 3.1
 * and JSON Schema 2020-12 define, so the page shows more as the document declares more.
 */

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

export interface Field {
  name: string;
  type: string;
  required: boolean;
  limits: string[];
  description: string | null;
  children: Field[];
}

export interface Body {
  mediaType: string;
  fields: Field[];
  /** The root's own type when it has no named fields (an array, a string...). */
  rootType: string | null;
  description: string | null;
  example: unknown;
  /** True when the example was written by the schema's author rather than made up here. */
  declaredExample: boolean;
}

export interface Problem {
  status: string;
  description: string;
  codes: string[];
  /** Each code with its own explanation, when the description gives one per code. */
  explained: { code: string; text: string }[] | null;
}

export interface Operation {
  id: string;
  method: string;
  path: string;
  tag: string;
  summary: string;
  description: string | null;
  auth: string | null;
  parameters: (Field & { in: string })[];
  request: Body | null;
  success: { status: string; description: string; bodies: Body[] }[];
  problems: Problem[];
  curl: string;
}

/** Follows a local `$ref` (`#/components/schemas/X`), once per level, with a guard on cycles. */
function deref(doc: Json, schema: unknown, seen = new Set<string>()): Json {
  let s = obj(schema);
  while (typeof s.$ref === 'string' && s.$ref.startsWith('#/') && !seen.has(s.$ref)) {
    seen.add(s.$ref);
    const target = s.$ref
      .slice(2)
      .split('/')
      .reduce<unknown>((node, key) => obj(node)[key.replaceAll('~1', '/').replaceAll('~0', '~')], doc);
    const { $ref: _ref, ...rest } = s;
    s = { ...obj(target), ...rest };
  }
  return s;
}

const refName = (schema: unknown) => {
  const ref = obj(schema).$ref;
  return typeof ref === 'string' ? ref.split('/').pop()! : null;
};

/** A short type: `string`, `integer`, `array of Citizen`, `"a" | "b"`, `string | null`. */
export function typeText(doc: Json, schema: unknown, depth = 0): string {
  const raw = obj(schema);
  const named = refName(raw);
  const s = deref(doc, raw);
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (Array.isArray(s.enum))
    return s.enum.length <= 6 ? s.enum.map((e) => JSON.stringify(e)).join(' | ') : `enum (${s.enum.length} values)`;
  const union = arr(s.anyOf ?? s.oneOf);
  if (union.length && depth < 3) return [...new Set(union.map((u) => typeText(doc, u, depth + 1)))].join(' | ');
  const types = Array.isArray(s.type) ? s.type.map(String) : typeof s.type === 'string' ? [s.type] : [];
  const one = (t: string) => {
    if (t === 'array') return `array of ${s.items ? typeText(doc, s.items, depth + 1) : 'any'}`;
    if (t === 'object' && named && !named.startsWith('__')) return named;
    if (t === 'string' && typeof s.format === 'string') return `string (${s.format})`;
    return t;
  };
  if (types.length) return types.map(one).join(' | ');
  if (s.properties) return named && !named.startsWith('__') ? named : 'object';
  if (s.allOf) return 'object';
  return 'any';
}

const n = (v: unknown, noun: string) => `${v} ${noun}${v === 1 ? '' : 's'}`;
const LIMITS: [string, (v: unknown) => string][] = [
  ['minLength', (v) => `at least ${n(v, 'character')}`],
  ['maxLength', (v) => `at most ${n(v, 'character')}`],
  ['minimum', (v) => `≥ ${v}`],
  ['exclusiveMinimum', (v) => `> ${v}`],
  ['maximum', (v) => `≤ ${v}`],
  ['exclusiveMaximum', (v) => `< ${v}`],
  ['multipleOf', (v) => `multiple of ${v}`],
  ['minItems', (v) => `at least ${n(v, 'item')}`],
  ['maxItems', (v) => `at most ${n(v, 'item')}`],
  ['uniqueItems', (v) => (v ? 'unique items' : '')],
  ['minProperties', (v) => `at least ${n(v, 'key')}`],
  ['maxProperties', (v) => `at most ${n(v, 'key')}`],
  ['pattern', (v) => `pattern ${v}`],
  ['default', (v) => `default ${JSON.stringify(v)}`],
];

function limitsOf(s: Json): string[] {
  const out = LIMITS.filter(([k]) => s[k] !== undefined)
    .map(([k, f]) => f(s[k]))
    .filter(Boolean);
  if (Array.isArray(s.enum) && s.enum.length > 6) out.push(`one of ${s.enum.map((e) => JSON.stringify(e)).join(', ')}`);
  if (s.deprecated) out.push('deprecated');
  if (s.readOnly) out.push('read-only');
  return out;
}

/** Properties of an object schema, merged over allOf; arrays show their items' fields. */
function propertiesOf(doc: Json, schema: Json): { props: Json; required: Set<string> } {
  const props: Json = { ...obj(schema.properties) };
  const required = new Set(arr(schema.required).map(String));
  for (const part of arr(schema.allOf)) {
    const p = deref(doc, part);
    Object.assign(props, obj(p.properties));
    for (const r of arr(p.required)) required.add(String(r));
  }
  return { props, required };
}

/** Fields of a schema, nested to `depth` levels (refs that loop stop there). */
export function fieldsOf(doc: Json, schema: unknown, depth = 4): Field[] {
  let s = deref(doc, schema);
  if (s.type === 'array' || (Array.isArray(s.type) && s.type.includes('array'))) s = deref(doc, s.items);
  const { props, required } = propertiesOf(doc, s);
  return Object.entries(props).map(([name, raw]) => {
    const p = deref(doc, raw);
    const items = deref(doc, p.items);
    const nested = depth > 0 && (p.properties || p.allOf || items.properties) ? fieldsOf(doc, raw, depth - 1) : [];
    return {
      name,
      type: typeText(doc, raw),
      required: required.has(name),
      limits: limitsOf(p),
      description: typeof p.description === 'string' ? p.description : typeof p.title === 'string' ? p.title : null,
      children: nested,
    };
  });
}

/** An example value: the schema's own when it has one, else one built from types and limits. */
export function exampleFor(doc: Json, schema: unknown, depth = 0): unknown {
  const s = deref(doc, schema);
  if (s.example !== undefined) return s.example;
  if (Array.isArray(s.examples) && s.examples.length) return s.examples[0];
  if (s.const !== undefined) return s.const;
  if (s.default !== undefined) return s.default;
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[0];
  if (depth > 5) return null;
  const union = arr(s.anyOf ?? s.oneOf).filter((u) => deref(doc, u).type !== 'null');
  if (union.length) return exampleFor(doc, union[0], depth + 1);
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  if (type === 'object' || s.properties || s.allOf) {
    const { props } = propertiesOf(doc, s);
    return Object.fromEntries(Object.entries(props).map(([k, v]) => [k, exampleFor(doc, v, depth + 1)]));
  }
  if (type === 'array') return [exampleFor(doc, s.items, depth + 1)];
  if (type === 'integer' || type === 'number') return typeof s.minimum === 'number' ? s.minimum : 1;
  if (type === 'boolean') return true;
  if (type === 'string') {
    const formats: Record<string, string> = {
      'date-time': '2026-11-22T12:00:00.000Z',
      date: '2026-11-22',
      uri: 'https://example.com/',
      url: 'https://example.com/',
      email: 'agent@example.com',
      uuid: '018f4e9c-3f7a-7c2e-9b1a-2d4e6f8a0b1c',
    };
    if (typeof s.format === 'string' && formats[s.format]) return formats[s.format];
    if (typeof s.pattern === 'string' && s.pattern.includes('sha256')) return `sha256:${'0'.repeat(64)}`;
    return 'string';
  }
  return null;
}

function bodyOf(doc: Json, mediaType: string, media: Json, description: string | null): Body {
  const schema = media.schema;
  const fields = schema ? fieldsOf(doc, schema) : [];
  const firstNamed = Object.values(obj(media.examples))
    .map((e) => obj(e).value)
    .find((v) => v !== undefined);
  const declared = media.example ?? firstNamed;
  return {
    mediaType,
    fields,
    rootType:
      schema && fields.length === 0
        ? typeText(doc, schema)
        : schema && deref(doc, schema).type === 'array'
          ? typeText(doc, schema)
          : null,
    description,
    example: declared ?? (schema ? exampleFor(doc, schema) : null),
    declaredExample: declared !== undefined || deref(doc, schema).example !== undefined,
  };
}

/**
 * Problem codes a response declares: `x-problem-codes`, its examples' `code`, or, for a schema of
 * its own, the `code` property's const or enum (a shared Problem schema lists every code there is).
 */
function codesOf(doc: Json, response: Json): string[] {
  const codes = new Set<string>();
  for (const key of ['x-problem-codes', 'x-codes']) for (const c of arr(response[key])) codes.add(String(c));
  for (const media of Object.values(obj(response.content))) {
    const m = obj(media);
    const examples = [m.example, ...Object.values(obj(m.examples)).map((e) => obj(e).value)];
    for (const e of examples) if (typeof obj(e).code === 'string') codes.add(obj(e).code as string);
  }
  if (codes.size) return [...codes];
  for (const media of Object.values(obj(response.content))) {
    const schema = obj(obj(media).schema);
    if (schema.$ref) continue;
    const code = deref(doc, obj(deref(doc, schema).properties).code);
    for (const c of arr(code.enum)) codes.add(String(c));
    if (typeof code.const === 'string') codes.add(code.const);
  }
  return [...codes];
}

/** "CODE: what it means. OTHER: ..." descriptions split per code, when every code is explained so. */
function explain(description: string, codes: string[]): { code: string; text: string }[] | null {
  if (!codes.length) return null;
  const parts = [...description.matchAll(/([A-Z][A-Z0-9_]+): (.*?)(?=\s+[A-Z][A-Z0-9_]+: |$)/gs)].map((m) => ({
    code: m[1]!,
    text: m[2]!.trim(),
  }));
  return codes.every((c) => parts.some((p) => p.code === c))
    ? codes.map((c) => parts.find((p) => p.code === c)!)
    : null;
}

const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

function curlOf(
  server: string,
  method: string,
  path: string,
  params: Operation['parameters'],
  request: Body | null,
  auth: string | null,
): string {
  let url =
    server.replace(/\/$/, '') +
    path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const p = params.find((x) => x.in === 'path' && x.name === name);
      return p?.type.includes('sha256') || name === 'id' ? `sha256:${'0'.repeat(64)}` : `<${name}>`;
    });
  const query = params.filter((p) => p.in === 'query' && p.required);
  if (query.length) url += `?${query.map((p) => `${p.name}=<${p.name}>`).join('&')}`;
  const lines = [`curl -sS${method === 'GET' ? '' : ` -X ${method}`} ${shellQuote(url)}`];
  if (auth) lines.push(`-H 'Authorization: Bearer <token>'`);
  if (request) {
    lines.push(`-H ${shellQuote(`Content-Type: ${request.mediaType}`)}`);
    if (request.mediaType.includes('json')) lines.push(`--data ${shellQuote(JSON.stringify(request.example))}`);
  }
  return lines.join(' \\\n  ');
}

const METHODS = ['get', 'put', 'post', 'patch', 'delete', 'head', 'options'];

/** Every operation of the document, in the order of its tags, then paths. */
export function operationsOf(document: unknown): Operation[] {
  const doc = obj(document);
  const server = String(obj(arr(doc.servers)[0]).url ?? '');
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(obj(doc.paths))) {
    for (const method of METHODS) {
      const op = obj(obj(item)[method]);
      if (!Object.keys(op).length) continue;
      const parameters = [...arr(obj(item).parameters), ...arr(op.parameters)].map((raw) => {
        const p = deref(doc, raw);
        const schema = deref(doc, p.schema);
        return {
          name: String(p.name),
          in: String(p.in),
          type: typeText(doc, p.schema),
          required: Boolean(p.required),
          limits: limitsOf(schema),
          description:
            typeof p.description === 'string'
              ? p.description
              : typeof schema.description === 'string'
                ? schema.description
                : null,
          children: [],
        };
      });
      const rb = deref(doc, op.requestBody);
      const rbMedia = Object.entries(obj(rb.content))[0];
      const request = rbMedia
        ? bodyOf(doc, rbMedia[0], obj(rbMedia[1]), typeof rb.description === 'string' ? rb.description : null)
        : null;
      const success: Operation['success'] = [];
      const problems: Problem[] = [];
      for (const [status, raw] of Object.entries(obj(op.responses))) {
        const r = deref(doc, raw);
        const description = String(r.description ?? '');
        const media = Object.entries(obj(r.content));
        if (/^[45]/.test(status) || media.some(([t]) => t.includes('problem'))) {
          const codes = codesOf(doc, r);
          problems.push({ status, description, codes, explained: explain(description, codes) });
        } else
          success.push({
            status,
            description,
            bodies: media
              .map(([t, m]) => bodyOf(doc, t, obj(m), null))
              .filter((b) => b.fields.length || b.rootType || (b.example !== null && b.example !== undefined)),
          });
      }
      const security = arr(op.security ?? doc.security);
      const auth = security.length ? Object.keys(obj(security[0])).join(', ') : null;
      const M = method.toUpperCase();
      ops.push({
        id: `${method}-${path}`.replace(/[^a-zA-Z0-9]+/g, '-').replace(/-+$/, ''),
        method: M,
        path,
        tag: String(arr(op.tags)[0] ?? 'other'),
        summary: String(op.summary ?? `${M} ${path}`),
        description: typeof op.description === 'string' && op.description !== op.summary ? op.description : null,
        auth,
        parameters,
        request,
        success,
        problems: problems.sort((a, b) => a.status.localeCompare(b.status)),
        curl: curlOf(server, M, path, parameters, request, auth),
      });
    }
  }
  const tags = arr(doc.tags).map((t) => String(obj(t).name));
  const rank = (t: string) => (tags.includes(t) ? tags.indexOf(t) : tags.length);
  return ops.sort((a, b) => rank(a.tag) - rank(b.tag));
}
