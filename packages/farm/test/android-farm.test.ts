// AndroidFarm against Debian's real adb (a private server on a free port) and the adb device
// double on a real loopback socket: what adb really sends, what the farm reports, and its
// refusals (bad APK, unsafe package names, a missing server or device, a stuck install).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AndroidFarm, type AndroidFarmOptions } from '../src/android/android-farm.ts';
import { AppInstallerError } from '../src/apps/app-installer.ts';
import { AdbDeviceDouble } from './helpers/adb-device-double.ts';
import {
  ADB_PATH,
  freeLoopbackPort,
  isListening,
  type PrivateAdbServer,
  startPrivateAdbServer,
} from './helpers/adb-server.ts';
import { buildTestApk } from './helpers/test-apk.ts';

let server: PrivateAdbServer;
let device: AdbDeviceDouble;
let farm: AndroidFarm;
let scratch: string;
let options: AndroidFarmOptions;

async function apkFile(name: string, bytes: Buffer): Promise<string> {
  const file = join(scratch, name);
  await writeFile(file, bytes);
  return file;
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'android-farm-test-'));
  device = await new AdbDeviceDouble().start();
  server = await startPrivateAdbServer();
  await server.attach(device.serial);
  options = {
    adbPath: ADB_PATH,
    aaptPath: '/usr/bin/aapt',
    adbServerPort: server.port,
    commandTimeoutMs: 15_000,
    installTimeoutMs: 20_000,
  };
  farm = new AndroidFarm(options);
});

afterAll(async () => {
  await server?.stop();
  await device?.stop();
  await rm(scratch, { recursive: true, force: true });
});

describe('AndroidFarm with the adb device double', () => {
  const target = () => ({ serial: device.serial });

  it('reads package, versionCode and versionName with aapt before installing', async () => {
    const file = await apkFile(
      'hello.apk',
      buildTestApk({ package: 'com.example.hello', versionCode: 7, versionName: '1.7' }),
    );
    await expect(farm.inspect(file)).resolves.toEqual({
      package: 'com.example.hello',
      version_code: '7',
      version_name: '1.7',
    });
  });

  it('installs through adb streaming the APK (exec:cmd package install -S) and lists it', async () => {
    const apk = buildTestApk({ package: 'com.example.hello', versionCode: 7, versionName: '1.7' });
    const file = await apkFile('hello.apk', apk);
    const outcome = await farm.install(target(), file, { replace: false });
    expect(outcome).toEqual({ ok: true, message: 'Success', reason: null });
    expect(device.services.at(-1)).toBe(`exec:cmd package 'install' -S ${apk.length}`);
    expect(device.packages.get('com.example.hello')).toEqual({
      name: 'com.example.hello',
      versionCode: 7,
      versionName: '1.7',
    });
    await expect(farm.listPackages(target(), 'third_party')).resolves.toEqual([
      'com.example.hello',
    ]);
    expect(await farm.listPackages(target(), 'all')).toEqual(
      expect.arrayContaining(['android', 'com.android.shell', 'com.example.hello']),
    );
  });

  it("reports the device's failure reason when the package is already there, and replaces with -r", async () => {
    const file = await apkFile(
      'hello-8.apk',
      buildTestApk({ package: 'com.example.hello', versionCode: 8, versionName: '1.8' }),
    );
    const refused = await farm.install(target(), file, { replace: false });
    expect(refused.ok).toBe(false);
    expect(refused.reason).toBe('INSTALL_FAILED_ALREADY_EXISTS');
    expect(refused.message).not.toContain(file);
    const replaced = await farm.install(target(), file, { replace: true });
    expect(replaced.ok).toBe(true);
    expect(device.services.at(-1)).toMatch(/^exec:cmd package 'install' '-r' -S \d+$/);
    expect(device.packages.get('com.example.hello')?.versionName).toBe('1.8');
  });

  it('reports a device-side install failure (adb exits 1 with Failure [REASON])', async () => {
    device.failNextInstallWith = 'INSTALL_FAILED_INSUFFICIENT_STORAGE';
    const file = await apkFile(
      'other.apk',
      buildTestApk({ package: 'com.example.other', versionCode: 1, versionName: '1' }),
    );
    await expect(farm.install(target(), file, { replace: false })).resolves.toEqual({
      ok: false,
      message: 'Failure [INSTALL_FAILED_INSUFFICIENT_STORAGE]',
      reason: 'INSTALL_FAILED_INSUFFICIENT_STORAGE',
    });
    expect(device.packages.has('com.example.other')).toBe(false);
  });

  it('uninstalls through adb uninstall, and reports the failure for a package not there', async () => {
    await expect(farm.uninstall(target(), 'com.example.hello')).resolves.toEqual({
      ok: true,
      message: 'Success',
      reason: null,
    });
    expect(device.services.at(-1)).toBe("shell:cmd package 'uninstall' 'com.example.hello'");
    expect(device.packages.has('com.example.hello')).toBe(false);
    const again = await farm.uninstall(target(), 'com.example.hello');
    expect(again).toEqual({
      ok: false,
      message: 'Failure [DELETE_FAILED_INTERNAL_ERROR]',
      reason: 'DELETE_FAILED_INTERNAL_ERROR',
    });
  });

  it.each([
    ["com.example.x'; reboot; '"],
    ['com.example.x reboot'],
    ['-k'],
    ['com'],
    ['$(reboot)'],
  ])('refuses to uninstall %j without running adb', async (name) => {
    const before = device.services.length;
    await expect(farm.uninstall(target(), name)).rejects.toMatchObject({ code: 'bad_package' });
    expect(device.services.length).toBe(before);
  });

  it.each([
    ['not a zip', Buffer.from('hello, I am not an APK')],
    ['an empty file', Buffer.alloc(0)],
  ])('refuses %s as a bad package', async (_label, bytes) => {
    const file = await apkFile('bad.apk', bytes);
    const error = await farm.inspect(file).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AppInstallerError);
    expect(error).toMatchObject({ code: 'bad_package' });
    expect((error as Error).message).not.toContain(scratch);
  });

  it('reports a device the server does not know as unavailable', async () => {
    const file = await apkFile(
      'x.apk',
      buildTestApk({ package: 'com.example.x', versionCode: 1, versionName: '1' }),
    );
    await expect(
      farm.install({ serial: '127.0.0.1:1' }, file, { replace: false }),
    ).rejects.toMatchObject({ code: 'device_unavailable' });
    await expect(farm.listPackages({ serial: 'nosuchdevice' }, 'all')).rejects.toMatchObject({
      code: 'device_unavailable',
    });
  });

  it('reports a missing adb server and does not start one', async () => {
    const port = await freeLoopbackPort();
    const lonely = new AndroidFarm({ ...options, adbServerPort: port });
    await expect(lonely.listPackages(target(), 'all')).rejects.toMatchObject({
      code: 'device_unavailable',
      message: expect.stringContaining('adb server is not running'),
    });
    expect(await isListening(port)).toBe(false);
  });

  it('kills adb and reports a timeout when the device never answers an install', async () => {
    const impatient = new AndroidFarm({ ...options, installTimeoutMs: 1_500 });
    device.stallInstalls = true;
    try {
      const file = await apkFile(
        'slow.apk',
        buildTestApk({ package: 'com.example.slow', versionCode: 1, versionName: '1' }),
      );
      const started = Date.now();
      await expect(impatient.install(target(), file, { replace: false })).rejects.toMatchObject({
        code: 'timeout',
      });
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      device.stallInstalls = false;
    }
    expect(device.packages.has('com.example.slow')).toBe(false);
    // The device is still usable afterwards.
    await expect(farm.listPackages(target(), 'third_party')).resolves.toEqual([]);
  });

  it('kills an install in flight when the farm closes, and refuses calls after', async () => {
    const closing = new AndroidFarm(options);
    device.stallInstalls = true;
    try {
      const file = await apkFile(
        'closing.apk',
        buildTestApk({ package: 'com.example.closing', versionCode: 1, versionName: '1' }),
      );
      const install = closing.install(target(), file, { replace: false });
      await new Promise((resolve) => setTimeout(resolve, 500));
      const started = Date.now();
      await closing.close();
      await expect(install).rejects.toMatchObject({
        code: 'device_unavailable',
        message: 'the farm is shutting down',
      });
      expect(Date.now() - started).toBeLessThan(2_000);
      await expect(closing.listPackages(target(), 'all')).rejects.toMatchObject({
        message: 'the farm is shutting down',
      });
    } finally {
      device.stallInstalls = false;
    }
    expect(device.packages.has('com.example.closing')).toBe(false);
  });
});
