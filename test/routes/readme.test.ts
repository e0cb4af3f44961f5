import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderReadme } from '../../api/operations/reference-doc.ts';

describe('the reference and the README', () => {
  it('lists the routes, problem codes and tools as the tables say (node api/cli/reference-doc.ts rewrites them)', () => {
    const reference = readFileSync('docs/reference.md', 'utf8');
    expect(reference).toBe(renderReadme(reference));
    expect(reference).toContain('`/api/telemetry/ingest`');
    expect(reference).not.toMatch(/\|\n\n\| GET/);
  });

  it('keeps the README a guide of at most 200 lines whose links all lead to files of the repository', () => {
    const readme = readFileSync('README.md', 'utf8');
    expect(readme.split('\n').length).toBeLessThanOrEqual(200);
    for (const doc of [
      'README.md',
      ...['reference', 'specification', 'architecture', 'deploy', 'decisions', 'benchmarks'].map((d) => `docs/${d}.md`),
    ]) {
      const text = readFileSync(doc, 'utf8');
      const base = doc.startsWith('docs/') ? 'docs/' : '';
      for (const [, target] of text.matchAll(/\]\((?!https?:|#|mailto:)([^)#\s]+)/g)) {
        const resolved = new URL(target!, `file:///r/${base}`).pathname.slice(3);
        expect(
          () => readFileSync(resolved.endsWith('/') ? `${resolved}.` : resolved),
          `${doc} links ${target}`,
        ).not.toThrow(/ENOENT/);
      }
      expect(text, `${doc} points outside the repository`).not.toMatch(/\.\.\/shared\//);
    }
  });
});
