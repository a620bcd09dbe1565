// Makes sure dist/ is a build of the current sources before a browser test serves it: the same
// staleness rule as scripts/setup.sh (dist/index.html older than any source), built at most once
// at a time across test workers.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const DASHBOARD_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SOURCES = ['src', 'public', 'index.html', 'vite.config.ts'].map((name) =>
  join(DASHBOARD_DIR, name),
);

function newestModification(path: string): number {
  if (!existsSync(path)) return 0;
  const stats = statSync(path);
  if (!stats.isDirectory()) return stats.mtimeMs;
  return readdirSync(path).reduce(
    (newest, name) => Math.max(newest, newestModification(join(path, name))),
    stats.mtimeMs,
  );
}

export function isDashboardBuildStale(): boolean {
  const built = join(DASHBOARD_DIR, 'dist', 'index.html');
  if (!existsSync(built)) return true;
  const builtAt = statSync(built).mtimeMs;
  return SOURCES.some((source) => newestModification(source) > builtAt);
}

function runViteBuild(): Promise<void> {
  const vite = join(dirname(createRequire(import.meta.url).resolve('vite/package.json')), 'bin');
  return new Promise((resolveBuild, reject) => {
    const child = spawn(process.execPath, [join(vite, 'vite.js'), 'build', '--logLevel', 'warn'], {
      cwd: DASHBOARD_DIR,
      // Vitest sets NODE_ENV=test, which would make Vite bundle React's development build.
      env: { ...process.env, NODE_ENV: 'production' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolveBuild() : reject(new Error(`vite build exited with ${code}`)),
    );
  });
}

const sleep = (ms: number) => new Promise((resolveSleep) => setTimeout(resolveSleep, ms));

/** Builds the app when dist/ is missing or stale; a lock directory serialises test workers. */
export async function ensureDashboardBuilt(): Promise<void> {
  if (!isDashboardBuildStale()) return;
  const key = createHash('sha256').update(DASHBOARD_DIR).digest('hex').slice(0, 12);
  const lock = join(tmpdir(), `capture-dashboard-build-${key}.lock`);
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // Another worker is building (about a second); a lock older than 30 s was left by a
      // killed run.
      const lockedAt = statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
      if (Date.now() - lockedAt > 30_000) rmSync(lock, { recursive: true, force: true });
      await sleep(200);
    }
  }
  try {
    if (isDashboardBuildStale()) await runViteBuild();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
