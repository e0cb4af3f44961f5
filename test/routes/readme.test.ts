import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderReadme } from '../../api/operations/readme.ts';

describe('README', () => {
  it('lists the routes, problem codes and tools as the tables say (node api/cli/readme.ts rewrites them)', () => {
    const readme = readFileSync('README.md', 'utf8');
    expect(readme).toBe(renderReadme(readme));
    expect(readme).toContain('`/api/telemetry/ingest`');
    expect(readme).not.toMatch(/\|\n\n\| GET/);
  });
});
