import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/** Distinct V8 shapes of 1,000 process.nextTick entries made in a fresh process after importing `module`. */
function tickShapesAfter(module: string): number {
  const out = execFileSync(
    'node_modules/.bin/node',
    ['--allow-natives-syntax', 'test/telemetry/fixtures/tick-shapes.mjs', module],
    { encoding: 'utf8' },
  );
  return Number(out.trim());
}

describe("node's nextTick entries after the client parser loads", () => {
  it('share one shape (each had its own, and nextTick went megamorphic, without tick-shape.ts)', () => {
    // What the parser's load does alone: every entry made before a full collection gets a shape of its own.
    expect(tickShapesAfter('node-device-detector')).toBeGreaterThan(100);
    // As the service loads it.
    expect(tickShapesAfter(new URL('../../api/telemetry/classification/person-client.ts', import.meta.url).href)).toBe(
      1,
    );
  });
});
