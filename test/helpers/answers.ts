import { Ajv2020 } from 'ajv/dist/2020.js';
import { loadContent } from '../../api/content/load.ts';
import { DOCUMENTS } from '../../api/documents/catalog.ts';
import { buildOpenApi } from '../../api/openapi/openapi.ts';

/**
 * Every answer a test receives is checked against the schema /openapi.json documents for its
 * operation, status and media type (ajv), so the document cannot drift from the service.
 */
const spec = buildOpenApi(await loadContent('content'), 'http://answers.test', DOCUMENTS) as any;
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema({ $id: 'openapi', components: spec.components }, 'openapi');
const templates = Object.keys(spec.paths).map((t) => [t, new RegExp(`^${t.replace(/\{\w+\}/g, '[^/]+')}$`)] as const);
const validators = new Map<string, ReturnType<typeof ajv.compile>>();

/** The operation a method and path fall under in /openapi.json. */
export function documented(method: string, path: string): any {
  const template = templates.find(([, re]) => re.test(path))?.[0];
  return template ? spec.paths[template]?.[method.toLowerCase() === 'head' ? 'get' : method.toLowerCase()] : undefined;
}

/** Fails unless the status is documented for the operation and the body matches its schema for that media type. */
export function checkAnswer(method: string, path: string, status: number, contentType: string, body: unknown): void {
  const op = documented(method, path);
  // A method a path does not take is refused 405 with Allow by the router, whatever the method.
  if (!op && status === 405)
    return checkSchema(`${method} ${path} 405`, { $ref: '#/components/schemas/Problem' }, body);
  if (!op) throw new Error(`${method} ${path} is not documented`);
  const response = op.responses[String(status)];
  if (!response)
    throw new Error(
      `${method} ${path} answered ${status}, which is not documented (${Object.keys(op.responses).join(', ')})`,
    );
  const media = contentType.split(';')[0]!.trim();
  if (body === undefined) return;
  const content = response.content?.[media];
  if (!content?.schema) throw new Error(`${method} ${path} ${status} answered ${media}, which is not documented`);
  checkSchema(`${method} ${path} ${status} ${media}`, content.schema, body);
}

function checkSchema(key: string, documentedSchema: object, body: unknown): void {
  const content = { schema: documentedSchema };
  let validate = validators.get(JSON.stringify(content.schema));
  if (!validate) {
    const schema = JSON.parse(JSON.stringify(content.schema).replaceAll('"#/components/', '"openapi#/components/'));
    validate = ajv.compile(schema);
    validators.set(JSON.stringify(content.schema), validate);
  }
  if (!validate(body))
    throw new Error(
      `${key} does not match its documented schema: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`,
    );
}

export { spec };
