import { readFileSync, writeFileSync } from 'node:fs';
import { renderReadme } from '../operations/readme.ts';

// Rewrites the README's generated sections (routes, problem codes, tools) from the tables.
const path = process.argv[2] ?? 'README.md';
writeFileSync(path, renderReadme(readFileSync(path, 'utf8')));
