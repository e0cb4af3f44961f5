import { readFileSync, writeFileSync } from 'node:fs';
import { renderReadme } from '../operations/reference-doc.ts';

// Rewrites the reference's generated sections (routes, problem codes, tools) from the tables.
const path = process.argv[2] ?? 'docs/reference.md';
writeFileSync(path, renderReadme(readFileSync(path, 'utf8')));
