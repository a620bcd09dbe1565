// `npm run stack -- logs [service] [--follow]` (docs/local-stack.md "Logs"), like
// `docker compose logs`: the lines of every service's file under <data-dir>/logs (or of one),
// merged in time order and printed the way the terminal shows notable lines; --follow keeps
// printing what the services append.
import { closeSync, existsSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { StackError } from '../errors.ts';
import { logFileName, logsDir, prettyPrinter } from './stack-logger.ts';

interface LogLine {
  time: number;
  text: string;
}

const FOLLOW_POLL_MS = 300;

/** The services with a log file, by name. */
export function loggedServices(dataDir: string): string[] {
  const dir = logsDir(dataDir);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith('.log'))
    .map((name) => basename(name, '.log'))
    .sort();
}

function filesFor(dataDir: string, service: string | undefined): string[] {
  const services = loggedServices(dataDir);
  if (service === undefined) return services.map((name) => join(logsDir(dataDir), `${name}.log`));
  if (!services.includes(service)) {
    throw new StackError(
      'bad_option',
      services.length === 0
        ? `no logs in ${logsDir(dataDir)} yet (start the stack with npm start)`
        : `no service ${service}; services with logs: ${services.join(', ')}`,
    );
  }
  return [join(logsDir(dataDir), logFileName(service))];
}

/** Reads what a file holds from `offset` on, as whole lines, and where the next read starts. */
function readFrom(file: string, offset: number): { lines: string[]; next: number } {
  const size = statSync(file).size;
  if (size <= offset) return { lines: [], next: size < offset ? 0 : offset };
  const buffer = Buffer.alloc(size - offset);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, buffer, 0, buffer.length, offset);
  } finally {
    closeSync(fd);
  }
  const text = buffer.toString('utf8');
  const end = text.lastIndexOf('\n') + 1;
  return {
    lines: text.slice(0, end).split('\n').filter(Boolean),
    next: offset + Buffer.byteLength(text.slice(0, end)),
  };
}

function parse(line: string): LogLine {
  try {
    return { time: Number((JSON.parse(line) as { time?: unknown }).time) || 0, text: line };
  } catch {
    return { time: 0, text: line };
  }
}

export interface ShowLogsOptions {
  dataDir: string;
  service?: string;
  follow: boolean;
  /** Where lines go (stdout in the CLI). */
  write(text: string): void;
  colorize: boolean;
  /** Stops following (the CLI: Ctrl-C). */
  signal?: AbortSignal;
}

export async function showLogs(options: ShowLogsOptions): Promise<void> {
  const print = prettyPrinter(options.colorize);
  const files = filesFor(options.dataDir, options.service);
  const offsets = new Map<string, number>();
  const emit = (lines: LogLine[]) => {
    lines.sort((a, b) => a.time - b.time);
    for (const line of lines) options.write(print(line.text));
  };
  const collect = (): LogLine[] => {
    const lines: LogLine[] = [];
    const current = options.service === undefined ? filesFor(options.dataDir, undefined) : files;
    for (const file of current) {
      const { lines: read, next } = readFrom(file, offsets.get(file) ?? 0);
      offsets.set(file, next);
      lines.push(...read.map(parse));
    }
    return lines;
  };
  emit(collect());
  while (options.follow && !options.signal?.aborted) {
    await new Promise((resolve) => setTimeout(resolve, FOLLOW_POLL_MS));
    emit(collect());
  }
}
