// The MCP conformance suite (@modelcontextprotocol/conformance 0.2.0-alpha.12) in its
// `authorization` mode against the stack's authorization server, on both origins: the RFC 8414
// metadata scenario, and the authorization-code scenario driven headless (the suite prints the
// authorize URL; we approve on the consent API as a member and deliver the redirect to the
// suite's callback listener). The suite needs Node >= 22 (`npx vitest` runs on the pinned Node 24).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '@capture/stack';
import { afterEach, describe, expect, it } from 'vitest';
import { approveViaConsentApi, registerClient, useOAuthStack } from './helpers/oauth-stack.ts';

const stack = useOAuthStack();

const CONFORMANCE = join(REPO_ROOT, 'node_modules', '.bin', 'conformance');
const SCENARIOS = ['authorization-code-grant', 'authorization-server-metadata-endpoint'];

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'SKIPPED' | 'INFO';
  errorMessage?: string;
}

function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Runs the suite; `onLine` sees each stdout line as it arrives. Resolves with the exit code. */
function runSuite(
  args: string[],
  onLine: (line: string) => void,
): { child: ChildProcess; exit: Promise<{ code: number | null; output: string }> } {
  const child = spawn(process.execPath, [CONFORMANCE, ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let pending = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) onLine(line.trim());
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  const exit = new Promise<{ code: number | null; output: string }>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
  return { child, exit };
}

/** The checks of every scenario the suite saved under `outputDir` (one folder per scenario). */
function readChecks(outputDir: string): Map<string, Check[]> {
  const byScenario = new Map<string, Check[]>();
  for (const folder of readdirSync(outputDir)) {
    const scenario = SCENARIOS.find((name) => folder.startsWith(`authorization-server-${name}-`));
    if (!scenario) throw new Error(`unexpected result folder ${folder}`);
    const checks = JSON.parse(readFileSync(join(outputDir, folder, 'checks.json'), 'utf8'));
    byScenario.set(scenario, checks as Check[]);
  }
  return byScenario;
}

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

describe('the MCP conformance suite, authorization mode', () => {
  it('runs on Node 22 or later, which the suite needs', () => {
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(22);
  });

  it.each(['mcpUrl', 'mcpLegacyUrl'] as const)(
    'passes every authorization-server scenario on %s',
    async (origin) => {
      const base = stack()[origin];
      const port = await findFreePort();
      const client = await registerClient(base, {
        redirect_uris: [`http://127.0.0.1:${port}/callback`],
        client_name: 'MCP conformance suite',
      });
      const outputDir = mkdtempSync(join(tmpdir(), 'tool-server-conformance-'));
      cleanups.push(() => rmSync(outputDir, { recursive: true, force: true }));

      let browser: Promise<void> | undefined;
      let listening: () => void = () => undefined;
      const listenerUp = new Promise<void>((resolve) => {
        listening = resolve;
      });
      const { child, exit } = runSuite(
        [
          'authorization',
          '--url',
          base,
          '--client-id',
          client.client_id,
          '--resource',
          base,
          '-p',
          String(port),
          '-o',
          outputDir,
        ],
        (line) => {
          // It prints the URL before its listener is up: the redirect waits for this line.
          if (line === `Callback server started: http://127.0.0.1:${port}`) listening();
          if (!browser && line.startsWith(`${base}/authorize?`)) {
            // The user's part: approve on the consent page, then the browser follows the redirect
            // to the suite's listener (which checks code, state and iss, then redeems the code).
            browser = approveViaConsentApi(stack(), line).then(async (callback) => {
              expect(callback.origin).toBe(`http://127.0.0.1:${port}`);
              await listenerUp;
              const delivered = await fetch(callback);
              expect(delivered.status).toBe(200);
            });
            // A failed approval would leave the suite waiting 5 minutes for its callback.
            browser.catch(() => child.kill());
          }
        },
      );
      cleanups.push(() => child.kill());

      const { code, output } = await exit;
      await browser;
      expect(browser, 'the suite printed no authorize URL').toBeDefined();
      expect(code, output).toBe(0);
      const checks = readChecks(outputDir);
      expect([...checks.keys()].sort()).toEqual(SCENARIOS);
      for (const [scenario, list] of checks) {
        expect(list.length, scenario).toBeGreaterThan(0);
        for (const check of list) {
          expect(
            `${scenario}: ${check.id} ${check.status} ${check.errorMessage ?? ''}`.trim(),
          ).toBe(`${scenario}: ${check.id} SUCCESS`);
        }
      }
    },
    60_000,
  );
});
