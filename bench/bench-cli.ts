// The command line of a benchmark: node:util parseArgs, plus a --help that says what the bench
// measures, what its figures are compared with and every flag's default, and usage errors as one
// line and the usage on stderr (exit 2), never a stack trace.
import { type ParseArgsOptionsConfig, parseArgs } from 'node:util';

interface FlagText {
  /** Benches take strings and convert them themselves, as with parseArgs alone. */
  type: 'string';
  /** The value's placeholder in the help: N, S, LIST, DIR. */
  value: string;
  /** What the flag changes in the run. */
  description: string;
}

/** A flag with the value the bench runs with when it is not given. */
interface DefaultedFlag extends FlagText {
  default: string;
}

/** A flag that changes nothing unless given; `unset` says what the bench does without it. */
interface OptionalFlag extends FlagText {
  default?: undefined;
  unset: string;
}

export type BenchFlag = DefaultedFlag | OptionalFlag;

export type BenchFlags = Record<string, BenchFlag>;

export interface BenchCli<Flags extends BenchFlags> {
  /** The npm script that runs the bench, e.g. `bench:realtime`. */
  name: string;
  /** What the bench measures, one paragraph (line breaks and indents in it are collapsed). */
  measures: string;
  /** Its anchor: the baseline measured in the same run, or the goal its figures are held to. */
  comparedWith: string;
  flags: Flags;
}

/** What parseArgs itself returns for these flags: a flag with a default is always a string. */
export type BenchValues<Flags extends BenchFlags> = ReturnType<
  typeof parseArgs<{ options: Flags; strict: true; allowPositionals: false }>
>['values'];

export interface ParsedBenchArgs<Flags extends BenchFlags> {
  values: BenchValues<Flags>;
  /** For a value parseArgs accepts but the bench cannot use: one line and the usage, exit 2. */
  exitWithUsage: (message: string) => never;
}

/** The repository's formatter width (biome.json), for the help as for the code. */
const WIDTH = 100;

/** Exit status of a command-line mistake, as the daemons' CLIs answer one. */
const USAGE_EXIT = 2;

/** Parses process.argv for a bench; answers --help and bad flags itself and exits. */
export function parseBenchArgs<Flags extends BenchFlags>(
  cli: BenchCli<Flags>,
): ParsedBenchArgs<Flags> {
  const exitWithUsage = (message: string): never => {
    process.stderr.write(`${cli.name}: ${message}\n\n${formatUsage(cli)}\n`);
    process.exit(USAGE_EXIT);
  };
  const options: ParseArgsOptionsConfig = { help: { type: 'boolean', short: 'h' } };
  for (const [name, flag] of Object.entries(cli.flags)) {
    options[name] = { type: flag.type, default: flag.default };
  }
  const { help, ...values } = parseOrExit(options, exitWithUsage);
  if (help) {
    process.stdout.write(`${formatHelp(cli)}\n`);
    process.exit(0);
  }
  // The options above are built at run time from `cli.flags`, so the compiler cannot see that
  // these are parseArgs' values for `Flags`; they are, plus the help flag taken out.
  return { values: values as BenchValues<Flags>, exitWithUsage };
}

/** parseArgs' values, or the usage and exit 2 for a mistake node reports. */
function parseOrExit(options: ParseArgsOptionsConfig, exitWithUsage: (message: string) => never) {
  try {
    return parseArgs({ options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    if (isParseArgsError(error)) return exitWithUsage(error.message);
    throw error;
  }
}

/** Node's own parse errors (unknown flag, missing value, stray argument): the caller's mistake. */
function isParseArgsError(error: unknown): error is Error {
  return (
    error instanceof TypeError &&
    'code' in error &&
    typeof error.code === 'string' &&
    error.code.startsWith('ERR_PARSE_ARGS_')
  );
}

/** The usage line and the flags with their defaults: what a mistake is answered with. */
function formatUsage(cli: BenchCli<BenchFlags>): string {
  return [usageLine(cli), '', formatFlags(cli.flags)].join('\n');
}

/** The whole help: usage, what is measured and against what, then the flags. */
function formatHelp(cli: BenchCli<BenchFlags>): string {
  return [
    usageLine(cli),
    '',
    fill(wordsOf(cli.measures), 0),
    '',
    fill(wordsOf(`Compared with: ${cli.comparedWith}`), 0),
    '',
    formatFlags(cli.flags),
  ].join('\n');
}

function usageLine(cli: BenchCli<BenchFlags>): string {
  return `Usage: npm run ${cli.name} -- [flags]`;
}

/** One entry per flag, descriptions aligned in a column and wrapped under it. */
function formatFlags(flags: BenchFlags): string {
  const rows: Array<[string, string[]]> = Object.entries(flags).map(([name, flag]) => [
    `--${name} ${flag.value}`,
    // The default stays one word, so it never breaks across lines.
    [...wordsOf(flag.description), `(default: ${flag.default ?? flag.unset})`],
  ]);
  rows.push(['-h, --help', wordsOf('print the full help and exit')]);
  // Two spaces before the label and at least two after it.
  const column = Math.max(...rows.map(([label]) => label.length)) + 4;
  const entries = rows.map(([label, words]) =>
    fill(words, column).replace(/^ */, `  ${label}`.padEnd(column)),
  );
  return ['Flags:', ...entries].join('\n');
}

/** Words of a text written across source lines: its line breaks and indents are not kept. */
function wordsOf(text: string): string[] {
  return text.trim().split(/\s+/);
}

/** Fills lines up to WIDTH columns with `words`, each line indented by `indent` spaces. */
function fill(words: string[], indent: number): string {
  const lines: string[] = [];
  let line = '';
  for (const word of words) {
    if (line && indent + line.length + 1 + word.length > WIDTH) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  lines.push(line);
  return lines.map((filled) => `${' '.repeat(indent)}${filled}`).join('\n');
}
