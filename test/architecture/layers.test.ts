import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// The floors of api/, lowest first, as docs/architecture.md draws them: a module imports from its
// own floor or below, never above. Keep the two in step.
const FLOORS: readonly (readonly string[])[] = [
  [
    'ids.ts',
    'build-info.ts',
    'tracing.ts',
    'log.ts',
    'startup-error.ts',
    'memo.ts',
    'problems',
    'names',
    'schemas',
    'content',
    'net',
  ],
  ['store'],
  ['citizenship', 'omip', 'ingress', 'telemetry'],
  ['http'],
  ['operations'],
  ['documents', 'mcp', 'a2a', 'openapi'],
  ['gateway'],
  ['config.ts', 'engine.ts', 'server.ts', 'main.ts', 'dev.ts', 'cli', 'operator'],
];

const walk = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  });

const files = walk('api');
/** Every import of each module by path (values and types, static and `import()`), as repository paths. */
const imports = new Map(
  files.map((file) => {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(/(?:(?:import|export)[^'"`;]*?from\s+|import\()['"]([./][^'"]*)['"]/g)].map((m) =>
      relative('.', resolve(dirname(file), m[1]!)),
    );
    return [file, targets] as const;
  }),
);
const floorOf = (file: string) => FLOORS.findIndex((floor) => floor.includes(relative('api', file).split('/')[0]!));

describe('the layers of api/', () => {
  it('puts every module on a floor', () => {
    expect(files.filter((f) => floorOf(f) === -1)).toEqual([]);
  });

  it('imports nothing by path from outside api/ (packages by name only)', () => {
    const outside = [...imports].flatMap(([file, targets]) =>
      // package.json is the one file outside api/ a module may read: the release it is (api/build-info.ts).
      targets.filter((t) => !t.startsWith('api/') && t !== 'package.json').map((t) => `${file} imports ${t}`),
    );
    expect(outside).toEqual([]);
  });

  it('imports only from its own floor or below', () => {
    const upward = [...imports].flatMap(([file, targets]) =>
      targets
        .filter((t) => floorOf(t) > floorOf(file))
        .map((t) => `${file} (floor ${floorOf(file)}) imports ${t} (floor ${floorOf(t)})`),
    );
    expect(upward).toEqual([]);
  });

  it('has no circle of imports', () => {
    // Tarjan's strongly connected components: any of more than one module is a circle.
    let next = 0;
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const circles: string[][] = [];
    const visit = (v: string) => {
      index.set(v, next);
      low.set(v, next++);
      stack.push(v);
      for (const w of imports.get(v) ?? []) {
        if (!imports.has(w)) continue;
        if (!index.has(w)) {
          visit(w);
          low.set(v, Math.min(low.get(v)!, low.get(w)!));
        } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
      if (low.get(v) !== index.get(v)) return;
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        component.push(w);
      } while (w !== v);
      if (component.length > 1) circles.push(component.sort());
    };
    for (const file of files) if (!index.has(file)) visit(file);
    expect(circles).toEqual([]);
  });

  it("keeps Astro out of the engine (only `npm run dev`, api/dev.ts, starts Astro's dev server)", () => {
    expect(files.filter((f) => /from\s+['"](astro|@astrojs\/)/.test(readFileSync(f, 'utf8')))).toEqual(['api/dev.ts']);
  });
});
