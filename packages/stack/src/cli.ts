#!/usr/bin/env node
// `npm run stack -- <command>`: up [--detach] [--free-ports] [--data-dir DIR] | down | status [-o json|env]
// | reset | mail [--to EMAIL] | check. See docs/local-stack.md.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { readMailbox } from './auth/mailbox.ts';
import { runDatabaseChecks } from './db-checks.ts';
import { readDemoLogins } from './demo-logins.ts';
import { StackError } from './errors.ts';
import { REPO_ROOT, startStack } from './stack.ts';
import { readLiveState, removeState, waitForExit, writeState } from './state-file.ts';
import { formatEnv, formatPretty, type StatusVariables } from './status-variables.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    detach: { type: 'boolean', default: false },
    'free-ports': { type: 'boolean', default: false },
    'data-dir': { type: 'string' },
    output: { type: 'string', short: 'o', default: 'pretty' },
    to: { type: 'string' },
  },
});

const dataDir = resolve(values['data-dir'] ?? join(REPO_ROOT, '.stack'));
const command = positionals[0] ?? 'status';

function printBanner(variables: StatusVariables): void {
  const logins = readDemoLogins(REPO_ROOT);
  console.log(`\nLocal stack is running.\n\n${formatPretty(variables)}\n`);
  if (logins.length > 0) {
    console.log('Demo logins:');
    for (const login of logins)
      console.log(`  ${login.email}  ${login.password}  ${login.description}`);
    console.log('');
  }
}

async function up(): Promise<void> {
  const running = readLiveState(dataDir);
  if (running) {
    console.log(`Already running (pid ${running.pid}).`);
    printBanner(running.variables);
    return;
  }
  if (values.detach) return upDetached();
  const stack = await startStack({
    dataDir,
    ports: values['free-ports'] ? 'free' : 'config',
    logger: pino({ level: process.env.LOG_LEVEL ?? 'info' }),
  });
  writeState(dataDir, {
    pid: process.pid,
    startedAt: new Date().toISOString(),
    variables: stack.status(),
  });
  printBanner(stack.status());
  console.log('Press Ctrl-C to stop.');
  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    await stack.stop();
    removeState(dataDir);
    process.exit(0);
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

/** Runs `up` in a background process that outlives this one, logging to <data-dir>/stack.log. */
async function upDetached(): Promise<void> {
  mkdirSync(dataDir, { recursive: true });
  const logFile = join(dataDir, 'stack.log');
  const output = openSync(logFile, 'a');
  const args = [
    process.argv[1] as string,
    'up',
    '--data-dir',
    dataDir,
    ...(values['free-ports'] ? ['--free-ports'] : []),
  ];
  const child = spawn(process.execPath, args, {
    detached: true,
    stdio: ['ignore', output, output],
  });
  child.unref();
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    const state = readLiveState(dataDir);
    if (state && state.pid === child.pid) {
      printBanner(state.variables);
      console.log(
        `Detached (pid ${child.pid}); logs in ${logFile}. Stop with: npm run stack -- down`,
      );
      return;
    }
    if (child.exitCode !== null) break;
    await new Promise((done) => setTimeout(done, 200));
  }
  throw new StackError('start_timeout', `the stack did not start; see ${logFile}`);
}

async function down(): Promise<void> {
  const state = readLiveState(dataDir);
  if (!state) {
    console.log('Not running.');
    return;
  }
  process.kill(state.pid, 'SIGTERM');
  if (!(await waitForExit(state.pid, 60_000))) {
    throw new StackError('not_running', `pid ${state.pid} did not stop within 60 s`);
  }
  removeState(dataDir);
  console.log('Stopped.');
}

function status(): void {
  const state = readLiveState(dataDir);
  if (!state)
    throw new StackError(
      'not_running',
      `no stack is running for ${dataDir} (start one with npm start)`,
    );
  if (values.output === 'json') console.log(JSON.stringify(state.variables, null, 2));
  else if (values.output === 'env') console.log(formatEnv(state.variables));
  else console.log(formatPretty(state.variables));
}

function reset(): void {
  if (readLiveState(dataDir))
    throw new StackError('bad_option', 'the stack is running: run `npm run stack -- down` first');
  if (existsSync(dataDir)) rmSync(dataDir, { recursive: true, force: true });
  console.log(`Removed ${dataDir}; the next \`npm start\` creates a fresh database with the seed.`);
}

function mail(): void {
  const messages = readMailbox(join(dataDir, 'mailbox'), values.to);
  if (messages.length === 0) console.log('No mail.');
  for (const message of messages) {
    console.log(
      `${message.sentAt}  ${message.to}  ${message.subject}\n  code: ${message.otp}\n  link: ${message.actionLink}\n`,
    );
  }
}

async function check(): Promise<void> {
  const state = readLiveState(dataDir);
  if (!state) throw new StackError('not_running', 'start the stack first (npm start)');
  const report = await runDatabaseChecks(REPO_ROOT, state.variables.DB_URL);
  console.log(JSON.stringify(report, null, 2));
  if (!report.passed) process.exitCode = 1;
}

const commands: Record<string, () => void | Promise<void>> = {
  up,
  down,
  status,
  reset,
  mail,
  check,
};

try {
  const run = commands[command];
  if (!run)
    throw new StackError(
      'bad_option',
      `unknown command ${command}; use up, down, status, reset, mail or check`,
    );
  await run();
} catch (error) {
  if (error instanceof StackError) {
    console.error(`stack: ${error.message}`);
    process.exit(error.code === 'not_running' ? 3 : 1);
  }
  throw error;
}
