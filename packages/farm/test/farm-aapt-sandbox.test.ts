// aapt in bubblewrap (docs/farm.md "Android devices"): aapt parses the caller's APK, so the farm
// runs it sandboxed. The real aapt still reads a test APK's identity there; a stand-in aapt, as a
// crafted APK's code would, looks for a host file, the network and the APK's own writability, and
// finds none of them (unsandboxed, the same stand-in does).
import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AndroidFarm, type AndroidFarmOptions } from '../src/android/android-farm.ts';
import { AppInstallerError } from '../src/apps/app-installer.ts';
import { buildTestApk } from './helpers/test-apk.ts';

/** An unprivileged uid no other test uses (the shell's are 61000 up, the browser's 62000 up). */
const AAPT_UID = 61_900;

let scratch: string;
let hostSecret: string;
let options: AndroidFarmOptions;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'farm-aapt-test-'));
  // The caller's directory is private, as app-family.ts makes it.
  await chmod(scratch, 0o700);
  const open = await mkdtemp(join(tmpdir(), 'farm-aapt-host-'));
  await chmod(open, 0o755);
  hostSecret = join(open, 'host-secret');
  await writeFile(hostSecret, 'host secret\n', { mode: 0o644 });
  options = {
    adbPath: '/usr/bin/adb',
    aaptPath: '/usr/bin/aapt',
    // Never reached: inspect() talks to no adb server.
    adbServerPort: 1,
    commandTimeoutMs: 15_000,
    installTimeoutMs: 15_000,
    aaptSandbox: { bwrapPath: '/usr/bin/bwrap', uid: AAPT_UID },
  };
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
  await rm(join(hostSecret, '..'), { recursive: true, force: true });
});

async function apk(name: string, bytes: Buffer): Promise<string> {
  const file = join(scratch, name);
  await writeFile(file, bytes, { mode: 0o600 });
  return file;
}

/** A stand-in aapt that reports, as its package name, what it could reach. */
async function probingAapt(): Promise<string> {
  const dir = join(scratch, 'probe');
  await mkdir(dir, { mode: 0o755 });
  await chmod(scratch, 0o711);
  const script = join(dir, 'aapt');
  await writeFile(
    script,
    [
      '#!/bin/sh',
      'state=contained',
      `if cat ${hostSecret} >/dev/null 2>&1; then state=read_host_file; fi`,
      `if ls ${scratch} >/dev/null 2>&1; then state=listed_caller_dir; fi`,
      'if [ -w "$3" ]; then state=apk_writable; fi',
      // Any interface but loopback in /proc/net/dev means a network.
      "if grep -qv -e '^ *lo:' -e '|' /proc/net/dev; then state=has_network; fi",
      `echo "package: name='com.example.$state' versionCode='1' versionName='1'"`,
    ].join('\n'),
    { mode: 0o755 },
  );
  return script;
}

describe('aapt in its sandbox', () => {
  it("reads the APK's package, versionCode and versionName", async () => {
    const file = await apk(
      'hello.apk',
      buildTestApk({ package: 'com.example.hello', versionCode: 7, versionName: '1.7' }),
    );
    await expect(new AndroidFarm(options).inspect(file)).resolves.toEqual({
      package: 'com.example.hello',
      version_code: '7',
      version_name: '1.7',
    });
  });

  it("leaves the caller's file as it was: owner and mode unchanged", async () => {
    // Regression: the file was hard-linked into the sandbox's directory and the link chown-ed and
    // chmod-ed for the sandbox's uid, which changed the caller's file (one inode).
    const file = await apk(
      'kept.apk',
      buildTestApk({ package: 'com.example.kept', versionCode: 2, versionName: '2' }),
    );
    const before = await stat(file);
    await new AndroidFarm(options).inspect(file);
    const after = await stat(file);
    expect({ uid: after.uid, gid: after.gid, mode: after.mode, nlink: after.nlink }).toEqual({
      uid: before.uid,
      gid: before.gid,
      mode: before.mode,
      nlink: before.nlink,
    });
  });

  it('refuses a file that is not an APK, naming no path', async () => {
    const file = await apk('not.apk', Buffer.from('not a zip'));
    const refused = await new AndroidFarm(options).inspect(file).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AppInstallerError);
    expect((refused as AppInstallerError).code).toBe('bad_package');
    expect((refused as AppInstallerError).message).not.toContain(scratch);
    expect((refused as AppInstallerError).message).not.toContain('/farm/');
  });

  // Regression: aapt parsed caller-supplied APKs outside any sandbox, as the tool server's user.
  it('reaches no host file, no network and cannot write the APK; unsandboxed it could', async () => {
    const file = await apk(
      'probe.apk',
      buildTestApk({ package: 'com.example.probe', versionCode: 1, versionName: '1' }),
    );
    const aaptPath = await probingAapt();
    const sandboxed = await new AndroidFarm({ ...options, aaptPath }).inspect(file);
    expect(sandboxed.package).toBe('com.example.contained');
    const { aaptSandbox: _, ...bare } = options;
    const unsandboxed = await new AndroidFarm({ ...bare, aaptPath }).inspect(file);
    expect(unsandboxed.package).not.toBe('com.example.contained');
  });
});
