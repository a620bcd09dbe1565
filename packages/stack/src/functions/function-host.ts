// Runs each edge function as its own Deno process on a loopback port, with the environment the
// Supabase edge runtime gives functions, and restarts one that died when it is next called.

import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { ManagedProcess } from '../managed-process.ts';
import { findFreePort, isPortOpen, waitUntil } from '../ports.ts';
import type { FunctionSource } from './discover.ts';

export interface FunctionEnvironment {
  SUPABASE_URL: string;
  SUPABASE_ANON_KEY: string;
  SUPABASE_SERVICE_ROLE_KEY: string;
  SUPABASE_DB_URL: string;
  SUPABASE_PUBLISHABLE_KEYS: string;
  SUPABASE_SECRET_KEYS: string;
}

export interface FunctionHostOptions {
  functions: FunctionSource[];
  environment: FunctionEnvironment;
  /** Secrets from supabase/functions/.env, given to every function. */
  secrets: Record<string, string>;
  projectDir: string;
  logger: Logger;
}

interface RunningFunction {
  source: FunctionSource;
  port: number;
  process: ManagedProcess;
  ready: Promise<void>;
}

export function denoBinaryPath(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('deno/package.json')), 'deno');
}

/** Function secrets a developer may set in the shell rather than in supabase/functions/.env. */
const PROVIDER_SECRET = /^(?:OPENAI_API_KEY|OPENAI_BASE_URL|ASSISTANT_[A-Z0-9_]+)$/;

/** First start downloads npm: dependencies into Deno's cache, so allow it a while. */
const BOOT_TIMEOUT_MS = 120_000;

export class FunctionHost {
  private readonly running = new Map<string, RunningFunction>();
  private readonly options: FunctionHostOptions;

  constructor(options: FunctionHostOptions) {
    this.options = options;
  }

  find(name: string): FunctionSource | undefined {
    return this.options.functions.find((fn) => fn.name === name);
  }

  /** Starts every function and waits until each listens; a function that fails to boot is logged. */
  async startAll(): Promise<void> {
    await Promise.all(
      this.options.functions.map((fn) =>
        this.ensureRunning(fn.name).catch((error: unknown) =>
          this.options.logger.error(
            { component: `fn:${fn.name}`, err: error },
            'function failed to boot',
          ),
        ),
      ),
    );
  }

  /** The port of a booted function, booting it (again) when it is not running. */
  async ensureRunning(name: string): Promise<number> {
    const existing = this.running.get(name);
    if (existing?.process.running) {
      await existing.ready;
      return existing.port;
    }
    const source = this.find(name);
    if (!source) throw new Error(`unknown function ${name}`);
    const port = await findFreePort();
    const rootConfig = join(this.options.projectDir, 'deno.json');
    const ownConfig = join(source.dir, 'deno.json');
    const config = existsSync(ownConfig)
      ? ownConfig
      : existsSync(rootConfig)
        ? rootConfig
        : undefined;
    const process = new ManagedProcess({
      name: `fn:${name}`,
      command: denoBinaryPath(),
      args: [
        'run',
        '--allow-net',
        '--allow-env',
        '--allow-read',
        '--allow-sys',
        '--no-prompt',
        ...(config ? ['--config', config] : []),
        source.entrypoint,
      ],
      cwd: source.dir,
      env: this.environmentFor(port),
      logger: this.options.logger,
    });
    const ready = process.whileRunning(
      waitUntil(`function ${name}`, () => isPortOpen(port), BOOT_TIMEOUT_MS),
    );
    const entry = { source, port, process, ready };
    this.running.set(name, entry);
    await ready;
    return port;
  }

  /**
   * The edge runtime's variables plus what Deno itself needs (PATH, HOME, its cache dir), and
   * the assistant's provider settings from the shell (OPENAI_API_KEY, OPENAI_BASE_URL,
   * ASSISTANT_*; docs/assistant.md) under supabase/functions/.env and the stack's own secrets.
   */
  private environmentFor(port: number): NodeJS.ProcessEnv {
    const inherited = Object.keys(globalThis.process.env).filter(
      (name) =>
        (['PATH', 'HOME', 'DENO_DIR', 'NPM_CONFIG_REGISTRY'].includes(name) ||
          PROVIDER_SECRET.test(name)) &&
        globalThis.process.env[name] !== undefined,
    );
    return {
      ...Object.fromEntries(inherited.map((name) => [name, globalThis.process.env[name]])),
      NO_COLOR: '1',
      DENO_NO_UPDATE_CHECK: '1',
      DENO_SERVE_ADDRESS: `tcp:127.0.0.1:${port}`,
      ...this.options.secrets,
      ...this.options.environment,
    };
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.running.values()].map((fn) => fn.process.stop()));
    this.running.clear();
  }
}
