#!/usr/bin/env node
// `npm run stack -- <command>`: up [--detach] [--free-ports] [--data-dir DIR] [--log-format F]
// [--lan [ADDRESS]] [--proxy-destinations LIST] | down
// | status [-o json|env] | logs [service] [-f] | reset | mail [--to EMAIL] | check
// | device android [--serial S] [--device UUID] [--revert] | help [command]. See docs/local-stack.md. User errors print
// one line and the usage (exit 2), never a stack trace; unexpected faults one line and a file.
import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { readMailbox } from './auth/mailbox.ts';
import { COMMAND_HELP, commandUsage, generalUsage } from './cli-usage.ts';
import { runDatabaseChecks } from './db-checks.ts';
import { readDemoLogins } from './demo-logins.ts';
import { deviceAndroid } from './device-command.ts';
import { StackError } from './errors.ts';
import { showLogs } from './logging/log-reader.ts';
import { createStackLogger, type LogFormat } from './logging/stack-logger.ts';
import { REPO_ROOT, startStack } from './stack.ts';
import { readLiveState, removeState, waitForExit, writeState } from './state-file.ts';
import { formatEnv, formatPretty, type StatusVariables } from './status-variables.ts';
import { terminalQr } from './terminal-qr.ts';

/** A mistake in the command line: one line and the usage, exit 2. */
class UsageError extends Error {}

/**
 * `--lan` takes an optional address: alone (last, or before another flag) it means "the default
 * route's", passed on as an empty value since parseArgs has no optional values.
 */
function withLanValue(args: string[]): string[] {
  const at = args.indexOf('--lan');
  if (at === -1) return args;
  const next = args[at + 1];
  if (next !== undefined && !next.startsWith('-')) return args;
  return [...args.slice(0, at + 1), '', ...args.slice(at + 1)];
}

function parseCommandLine() {
  try {
    return parseArgs({
      args: withLanValue(process.argv.slice(2)),
      allowPositionals: true,
      options: {
        detach: { type: 'boolean', default: false },
        'free-ports': { type: 'boolean', default: false },
        'data-dir': { type: 'string' },
        output: { type: 'string', short: 'o', default: 'pretty' },
        to: { type: 'string' },
        follow: { type: 'boolean', short: 'f', default: false },
        'log-format': { type: 'string' },
        lan: { type: 'string' },
        serial: { type: 'string' },
        device: { type: 'string' },
        revert: { type: 'boolean', default: false },
        'proxy-destinations': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    // node:util parseArgs reports unknown flags and missing values as ERR_PARSE_ARGS_*.
    const code = (error as { code?: string }).code ?? '';
    // Its messages run over several lines; the first names the mistake.
    if (code.startsWith('ERR_PARSE_ARGS')) {
      throw new UsageError(((error as Error).message.split('\n')[0] ?? '').trim());
    }
    throw error;
  }
}

function failUsage(message: string, usage = generalUsage()): never {
  console.error(`stack: ${message}\n\n${usage}`);
  process.exit(2);
}

let parsed: ReturnType<typeof parseCommandLine>;
try {
  parsed = parseCommandLine();
} catch (error) {
  if (error instanceof UsageError) failUsage(error.message);
  throw error;
}
const { values, positionals } = parsed;
const dataDir = resolve(values['data-dir'] ?? join(REPO_ROOT, '.stack'));
const command = positionals[0] ?? (values.help ? 'help' : 'status');

function printBanner(variables: StatusVariables): void {
  const logins = readDemoLogins(REPO_ROOT);
  console.log(`\nLocal stack is running.\n\n${formatPretty(variables)}\n`);
  if (variables.PHONE_SETUP_URL) {
    console.log(
      `Set up a phone on this network: scan the code with its camera, or open\n` +
        `  ${variables.PHONE_SETUP_URL}\n\n${terminalQr(variables.PHONE_SETUP_URL)}\n`,
    );
  } else if (variables.PROXY_LAN_ADDRESS) {
    console.log(
      'Set up a phone: dashboard → Devices → Set up (its QR code opens the set-up page).\n',
    );
  }
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
    ...(values.lan !== undefined && { lan: { address: values.lan || undefined } }),
    proxyDestinations: destinationsFlag(),
    logger: createStackLogger({
      dataDir,
      format: logFormat(),
      level: process.env.LOG_LEVEL ?? 'info',
    }),
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
  const logStart = existsSync(logFile) ? statSync(logFile).size : 0;
  const output = openSync(logFile, 'a');
  const args = [
    process.argv[1] as string,
    'up',
    '--data-dir',
    dataDir,
    ...(values['free-ports'] ? ['--free-ports'] : []),
    ...(values.lan !== undefined ? [`--lan=${values.lan}`] : []),
    ...(values['proxy-destinations'] !== undefined
      ? [`--proxy-destinations=${values['proxy-destinations']}`]
      : []),
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
    if (child.exitCode !== null) {
      // The background process printed why, as one `stack: …` line, into the log: say it here.
      const said = readFileSync(logFile, 'utf8')
        .slice(logStart)
        .split('\n')
        .filter((line) => line.startsWith('stack: '));
      if (said.length > 0) {
        console.error(said.join('\n'));
        process.exit(1);
      }
      throw new StackError('process_exited', `the stack exited while starting; see ${logFile}`);
    }
    await new Promise((done) => setTimeout(done, 200));
  }
  throw new StackError('start_timeout', `the stack did not start within 180 s; see ${logFile}`);
}

/**
 * Where the stack's proxy may connect: `--proxy-destinations`, else PROXY_DESTINATIONS, else
 * config.toml's `[capture_proxy] destinations` (read by the stack), else `public`.
 */
function destinationsFlag(): string[] | undefined {
  const chosen = values['proxy-destinations'] ?? process.env.PROXY_DESTINATIONS;
  if (chosen === undefined) return undefined;
  return chosen
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
}

/** Human lines on a terminal, JSON lines for machines (docs/local-stack.md "Logs"). */
function logFormat(): LogFormat {
  const chosen = values['log-format'];
  if (chosen === 'pretty' || chosen === 'json') return chosen;
  return process.stdout.isTTY ? 'pretty' : 'json';
}

async function logs(): Promise<void> {
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  await showLogs({
    dataDir,
    service: positionals[1],
    follow: values.follow,
    colorize: process.stdout.isTTY === true,
    write: (text) => process.stdout.write(text),
    signal: controller.signal,
  });
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

/** `device android`: a phone on adb pointed at its device port (docs/proxy.md). */
async function device(): Promise<void> {
  if (positionals[1] !== 'android') {
    failUsage('device takes a platform: android', commandUsage('device'));
  }
  await deviceAndroid({
    dataDir,
    serial: values.serial,
    deviceUuid: values.device,
    revert: values.revert,
    log: (line) => console.log(line),
  });
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

function help(): void {
  const topic = command === 'help' ? positionals[1] : command;
  if (!topic || topic === 'help') {
    console.log(generalUsage());
    return;
  }
  const usage = commandUsage(topic);
  if (!usage) failUsage(`no command ${topic}`);
  console.log(usage);
}

const commands: Record<string, () => void | Promise<void>> = {
  up,
  down,
  status,
  logs,
  reset,
  mail,
  check,
  device,
  help,
};

/** Argument checks no parser does: the command exists, values are in range. */
function checkCommandLine(): void {
  if (!COMMAND_HELP[command]) failUsage(`unknown command ${command}`);
  if (positionals.length > (['help', 'logs', 'device'].includes(command) ? 2 : 1)) {
    failUsage(`${command} takes no argument ${positionals.at(-1)}`, commandUsage(command));
  }
  const format = values['log-format'];
  if (format !== undefined && format !== 'pretty' && format !== 'json') {
    failUsage(`--log-format must be pretty or json, not ${format}`, commandUsage('up'));
  }
  if (!['pretty', 'json', 'env'].includes(values.output)) {
    failUsage(`--output must be pretty, json or env, not ${values.output}`, commandUsage('status'));
  }
}

/** An unexpected fault: one line on screen, the detail in a file people can attach to a report. */
function reportFault(error: unknown): never {
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  let where = join(dataDir, 'stack-error.log');
  try {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(
      where,
      `${new Date().toISOString()} stack ${process.argv.slice(2).join(' ')}\n${detail}\n`,
    );
  } catch {
    where = join(tmpdir(), `stack-error-${process.pid}.log`);
    writeFileSync(where, `${detail}\n`);
  }
  const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
  console.error(`stack: unexpected failure: ${message} (details in ${where})`);
  process.exit(1);
}

checkCommandLine();
try {
  await (values.help ? help : (commands[command] as () => void | Promise<void>))();
} catch (error) {
  if (error instanceof StackError) {
    console.error(`stack: ${error.message}`);
    process.exit(error.code === 'not_running' ? 3 : 1);
  }
  reportFault(error);
}
