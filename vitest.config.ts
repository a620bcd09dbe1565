// One vitest run for every package: unit tests and integration tests that each start their own
// throwaway stack on free ports.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'proxy/test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 180_000,
    pool: 'forks',
    maxWorkers: 2,
    // Bounded-memory tests collect garbage before sampling, so what they see is what is held.
    execArgv: ['--expose-gc'],
  },
});
