// The stack's logs (docs/local-stack.md "Logs"): every line of every service goes, as JSON, to
// <data-dir>/logs/<service>.log; the terminal gets either one human line per notable event (a
// service started or stopped, a migration applied, anything at warn or above), coloured by level
// with pino-pretty, or, off a terminal or with --log-format json, the JSON lines as before for
// machines. Routine request and cron lines stay in the files.
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import { prettyFactory } from 'pino-pretty';

export type LogFormat = 'pretty' | 'json';

/** Marks a log line for the terminal: `logger.info(notable('postgres'), 'started')`. */
export function notable(component: string): { component: string; notable: true } {
  return { component, notable: true };
}

/** pino's warn level: from here on every line is notable. */
const WARN = 40;

/** Service names become file names: keep them to a safe alphabet. */
export function logFileName(component: unknown): string {
  const name = typeof component === 'string' && component !== '' ? component : 'stack';
  return `${name.replace(/[^a-zA-Z0-9_.-]/g, '_')}.log`;
}

export function logsDir(dataDir: string): string {
  return join(dataDir, 'logs');
}

/** Routes each JSON line to the file of its service. */
class ServiceFiles extends Writable {
  private readonly dir: string;
  private readonly files = new Map<string, WriteStream>();

  constructor(dir: string) {
    super();
    this.dir = dir;
    mkdirSync(dir, { recursive: true });
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    const line = chunk.toString();
    let component: unknown;
    try {
      component = (JSON.parse(line) as { component?: unknown }).component;
    } catch {
      component = undefined;
    }
    const name = logFileName(component);
    let file = this.files.get(name);
    if (!file) {
      file = createWriteStream(join(this.dir, name), { flags: 'a' });
      this.files.set(name, file);
    }
    file.write(line.endsWith('\n') ? line : `${line}\n`, () => done());
  }

  override _final(done: () => void): void {
    let open = this.files.size;
    if (open === 0) done();
    for (const file of this.files.values()) file.end(() => --open === 0 && done());
  }
}

/** pino-pretty's one-line format, as `stack logs` prints too. */
export function prettyPrinter(colorize: boolean): (entry: string | object) => string {
  return prettyFactory({
    colorize,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss',
    ignore: 'pid,hostname,notable,component',
    messageFormat: '{if component}{component}: {end}{msg}',
    messageKey: 'msg',
  });
}

/** The terminal side of pretty output: notable lines only. */
class NotableLines extends Writable {
  private readonly print = prettyPrinter(process.stdout.isTTY === true);

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    try {
      const entry = JSON.parse(chunk.toString()) as { level?: number; notable?: boolean };
      if (entry.notable || (entry.level ?? 0) >= WARN) process.stdout.write(this.print(entry));
    } catch {
      process.stdout.write(chunk);
    }
    done();
  }
}

export interface StackLoggerOptions {
  dataDir: string;
  format: LogFormat;
  level: string;
}

export function createStackLogger(options: StackLoggerOptions): Logger {
  const files = new ServiceFiles(logsDir(options.dataDir));
  const terminal = options.format === 'pretty' ? new NotableLines() : process.stdout;
  return pino(
    { level: options.level },
    pino.multistream([
      { level: options.level as pino.Level, stream: files },
      { level: options.level as pino.Level, stream: terminal },
    ]),
  );
}
