import { apiSchemas } from '../schemas/registry.ts';
import { PROBLEMS } from '../problems/table.ts';
import { successOf, type AnyOperation } from './operation.ts';
import { TOOL_OPERATIONS } from './paths.ts';
import { OPERATIONS } from './table.ts';

/**
 * The reference's generated sections (docs/reference.md), made from the operation and problem tables. `node
 * api/cli/reference-doc.ts` writes them between their markers; test/routes/readme.test.ts fails when the
 * page differs.
 */

const CREDENTIAL: Record<AnyOperation['credentials'], string> = {
  none: '',
  'passport-optional': 'passport, optional',
  passport: 'passport',
  'ingest-token': '`INGEST_TOKEN`',
};

const answerOf = (op: AnyOperation): string => {
  if (op.served === 'page') return '200 HTML';
  const status = successOf(op);
  const schema = op.responses[status]?.schema;
  const id = schema ? apiSchemas.get(schema)?.id : undefined;
  return id ? `${status} \`${id}\`` : String(status);
};

const cell = (text: string) => text.replaceAll('|', '\\|');

/** Every operation the engine or a page answers (the prebuilt documents have their own table). */
export function operationsTable(): string {
  const rows = (OPERATIONS as readonly AnyOperation[])
    .filter((op) => op.served !== 'document')
    .map((op) => {
      const notes = [
        op.idempotency ? 'Idempotency-Key' : '',
        op.rateLimit ? 'rate-limited' : '',
        op.funnel ? `funnel: ${op.funnel}` : '',
        op.tool ? `tool \`${op.tool.name}\`${op.tool.a2a ? ' (MCP, A2A)' : ' (MCP)'}` : '',
      ].filter(Boolean);
      return `| ${op.method} | \`${op.path}\` | ${cell(op.summary)} | ${answerOf(op)} | ${CREDENTIAL[op.credentials]} | ${notes.join(', ')} |`;
    });
  return ['| Method | Path | What | Answer | Credential | Also |', '|---|---|---|---|---|---|', ...rows].join('\n');
}

/** Every problem code: status, code, when. */
export function problemsTable(): string {
  const rows = Object.entries(PROBLEMS).map(([code, p]) => `| ${p.status} | \`${code}\` | ${cell(p.when)} |`);
  return ['| Status | Code | When |', '|---|---|---|', ...rows].join('\n');
}

/** The tools, as MCP and the convert payload list them, with the A2A skills marked. */
export function toolsList(): string {
  return TOOL_OPERATIONS.filter((op) => op.tool!.mcp)
    .map(
      (op) =>
        `- \`${op.tool!.name}\` (${op.method} \`${op.path}\`${op.tool!.a2a ? '; also an A2A skill' : ''}): ${op.tool!.description}`,
    )
    .join('\n');
}

export const README_SECTIONS = { operations: operationsTable, problems: problemsTable, tools: toolsList };

/** The README with each generated section replaced between `<!-- name:start -->` and `<!-- name:end -->`. */
export function renderReadme(readme: string): string {
  let out = readme;
  for (const [name, make] of Object.entries(README_SECTIONS)) {
    const start = `<!-- ${name}:start -->`;
    const end = `<!-- ${name}:end -->`;
    const i = out.indexOf(start);
    const j = out.indexOf(end);
    if (i === -1 || j < i) throw new Error(`README has no ${start} ... ${end} section`);
    out = `${out.slice(0, i + start.length)}\n${make()}\n${out.slice(j)}`;
  }
  return out;
}
