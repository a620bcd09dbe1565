// One vitest run for every package: unit tests and integration tests that each start their own
// throwaway stack on free ports.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: [
      'packages/*/test/**/*.test.ts',
      'proxy/test/**/*.test.ts',
      // End-to-end suites of what supabase/ deploys: the REST API, ask, the federation broker.
      'supabase/e2e/**/*.test.ts',
    ],
    testTimeout: 30_000,
    hookTimeout: 180_000,
    // expect.poll waits for an effect (a row on a page, a state); its own 1 s default is a timing
    // margin a busy machine overruns, so it waits as long as `until` does.
    expect: { poll: { timeout: 10_000 } },
    pool: 'forks',
    maxWorkers: 2,
    // Bounded-memory tests collect garbage before sampling, so what they see is what is held.
    execArgv: ['--expose-gc'],
    // Test stacks sign in hundreds of times from 127.0.0.1: no per-address auth limits unless a
    // test asks for them (packages/stack/test/auth-attacks.test.ts); per-account guards stay on.
    env: { STACK_AUTH_RATE_LIMITS: 'off' },
  },
});
