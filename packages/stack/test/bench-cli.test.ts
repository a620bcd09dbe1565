// Every bench that package.json runs explains itself (bench/bench-cli.ts): --help says what it
// measures, what it is compared with and each flag with its default, and exits 0 before the bench
// starts anything; a bad flag is one line plus the usage on stderr and exit 2. Never a stack trace.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const { scripts } = JSON.parse(readFileSync(`${REPO_ROOT}package.json`, 'utf8')) as {
  scripts: Record<string, string>;
};

/** Every .ts file a `bench` or `bench:*` script runs with node, once each: new ones included. */
function benchFiles(): string[] {
  const files = new Set<string>();
  for (const [name, command] of Object.entries(scripts)) {
    if (name !== 'bench' && !name.startsWith('bench:')) continue;
    for (const [, file] of command.matchAll(/\bnode (\S+\.ts)\b/g)) files.add(file as string);
  }
  return [...files];
}

/**
 * The flags a bench declares, read from its source: each `name: { type: 'string'`, and those of
 * a shared set it spreads in (`...GENERATED_CAPTURE_FLAGS`, from the module it imports it from).
 */
function declaredFlags(file: string): string[] {
  const source = readFileSync(`${REPO_ROOT}${file}`, 'utf8');
  const own = [...source.matchAll(/['"]?([a-z][\w-]*)['"]?:\s*\{\s*type:\s*'string'/g)].map(
    ([, flag]) => flag as string,
  );
  const shared = [...source.matchAll(/\.\.\.([A-Z_]+_FLAGS)\b/g)].flatMap(([, name]) => {
    const from = new RegExp(`import \\{[^}]*\\b${name}\\b[^}]*\\} from '([^']+)'`).exec(
      source,
    )?.[1];
    if (!from) throw new Error(`${file} spreads ${name} without importing it`);
    const module = readFileSync(new URL(from, `file://${REPO_ROOT}${file}`), 'utf8');
    const set = new RegExp(`export const ${name} = \\{([\\s\\S]*?)\\} as const`).exec(module)?.[1];
    if (!set) throw new Error(`${from} does not export ${name}`);
    return [...set.matchAll(/^ {2}([a-z][\w-]*):\s*\{/gm)].map(([, flag]) => flag as string);
  });
  return [...own, ...shared];
}

/**
 * Node's compile cache for the runs, shared: the benches load much the same modules, and with
 * their stripped TypeScript cached each --help costs about half the CPU.
 */
const compileCache = mkdtempSync(join(tmpdir(), 'bench-cli-test-'));
afterAll(() => rmSync(compileCache, { recursive: true, force: true }));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a bench with this Node (24: it runs .ts files). A bench that starts its work instead of
 * answering would run for minutes: it is killed after 20 s, and fails the test.
 */
function runBench(file: string, args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file, ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, NODE_COMPILE_CACHE: compileCache },
      timeout: 20_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A stack trace's frames, or node's own name for a parse error, anywhere in the output. */
const STACK_TRACE = /^\s+at |ERR_PARSE_ARGS|node:internal/m;

describe('bench --help', () => {
  const files = benchFiles();

  it("reads the benches from package.json's scripts", () => {
    expect(files).toContain('bench/realtime-bench.ts');
  });

  it.each(files)(
    '%s explains what it measures, its anchor and every flag, and exits 0',
    async (file) => {
      const result = await runBench(file, ['--help']);
      expect(result.stderr).not.toMatch(STACK_TRACE);
      expect(result.code).toBe(0);
      const script = /^Usage: npm run (\S+) -- \[flags\]$/m.exec(result.stdout)?.[1] ?? '';
      expect(scripts[script], 'the usage names the npm script that runs this bench').toBe(
        `node ${file}`,
      );
      expect(result.stdout).toMatch(/^Compared with: \S/m);
      for (const flag of declaredFlags(file)) {
        expect(result.stdout).toMatch(new RegExp(`^ {2}--${flag} \\S+ {2,}\\S`, 'm'));
      }
      expect(result.stdout.match(/\(default: [^)]+\)/g)).toHaveLength(declaredFlags(file).length);
      expect(result.stdout).toMatch(/^ {2}-h, --help /m);
    },
  );
});

describe('a bench given a bad command line', () => {
  it.each([
    ['an unknown flag', ['--no-such-flag'], "Unknown option '--no-such-flag'"],
    ['a flag without its value', ['--rate'], "Option '--rate <value>' argument missing"],
    ['a stray argument', ['stray'], "Unexpected argument 'stray'"],
  ])('refuses %s in one line with the usage, exit 2', async (_case, args, message) => {
    const result = await runBench('bench/realtime-bench.ts', args);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    const [first, second] = result.stderr.split('\n');
    expect(first).toMatch(/^bench:realtime: /);
    expect(first).toContain(message);
    expect(second).toBe('');
    expect(result.stderr).toContain('Usage: npm run bench:realtime -- [flags]');
    expect(result.stderr).toMatch(/^ {2}--clients LIST {2,}\S/m);
    expect(result.stderr).not.toMatch(STACK_TRACE);
  });

  it.each([
    ['bench/lan-setup-bench.ts', 'bench:lan', ['--runs', '0']],
    ['packages/tool-server/bench/oauth-bench.ts', 'bench:oauth', ['--runs', '0']],
  ])(
    '%s refuses a value it cannot use in one line with the usage, exit 2',
    async (file, name, args) => {
      const result = await runBench(file, args);
      expect(result.code).toBe(2);
      const [first, second] = result.stderr.split('\n');
      expect(first).toMatch(new RegExp(`^${name}: --\\S+ must be `));
      expect(second).toBe('');
      expect(result.stderr).toContain(`Usage: npm run ${name} -- [flags]`);
      expect(result.stderr).not.toMatch(STACK_TRACE);
    },
  );
});
