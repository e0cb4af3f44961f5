import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/build.ts'],
    // Every answer a test fetches is checked against its documented schema (test/helpers/answers.ts).
    setupFiles: ['test/helpers/check-answers.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Servers are child processes; two cores do not gain from more parallel files.
    maxWorkers: 2,
  },
});
