import { defineConfig } from 'vitest/config';

// These files start Astro processes (builds, the dev server) that share the project's .astro/
// folder: run alone, after the rest, one at a time.
const ASTRO_PROCESSES = [
  'test/operator/dev.test.ts',
  'test/documents/links.test.ts',
  'test/build/content-errors.test.ts',
  'test/build/concurrent-start.test.ts',
];

export default defineConfig({
  test: {
    globalSetup: ['test/helpers/build.ts'],
    // Every answer a test fetches is checked against its documented schema (test/helpers/answers.ts).
    setupFiles: ['test/helpers/check-answers.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Most servers run in the test's own process (test/helpers/server.ts): one worker a core.
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: 'service',
          isolate: false,
          include: ['test/**/*.test.ts'],
          exclude: ASTRO_PROCESSES,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'astro-processes',
          include: ASTRO_PROCESSES,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
