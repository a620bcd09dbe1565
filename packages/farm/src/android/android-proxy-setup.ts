// Points an Android phone attached over adb at its capture-proxy device port, and back: the
// global HTTP proxy setting, the CA certificate pushed to Downloads with the screen that installs
// it, and the device's set-up page opened in the phone's browser (docs/farm.md "Android over
// USB"). Every step is one `adb -H 127.0.0.1 -P <port> -s <serial> …` client run with an argument
// array and a time limit; words that reach the phone's shell are validated and quoted.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADB_SERIAL, type AdbDevice, parseDeviceList } from './adb-device-list.ts';
import { AndroidSetupError } from './android-setup-error.ts';
import { type CommandResult, runCommand } from './run-command.ts';

export interface AndroidProxySetupOptions {
  adbPath: string;
  /** The adb server's port (`adb -P`); the set-up never starts a server (see `adbArgs`). */
  adbServerPort: number;
  /** The phone to use; without it, the only one attached. */
  serial?: string;
  /** Limit of each adb run. */
  commandTimeoutMs?: number;
}

export interface ProxyConnectPlan {
  /** The host the phone sends its traffic to: the LAN address, or 127.0.0.1 with `reverse`. */
  proxyHost: string;
  /** The device's dedicated capture-proxy port. */
  port: number;
  /** The port serving the set-up page (reversed too); default: `setupUrl`'s port. */
  managementPort?: number;
  /** The proxy's CA certificate, DER. */
  caDer: Buffer;
  /** `<PROXY_SETUP_URL>/setup/<token>`. */
  setupUrl: string;
  /** Reach the proxy through `adb reverse` instead of the LAN. */
  reverse: boolean;
}

export interface ProxyRevertPlan {
  reverse: boolean;
  /** With `reverse`: the ports whose reverse forwarding connect made. */
  port?: number;
  managementPort?: number;
}

export interface AndroidSetupReport {
  device: AdbDevice;
  /** The adb runs, in order: the arguments after `-s <serial>`. */
  commands: string[][];
}

/** Where the CA lands: the Downloads folder, where Settings' certificate picker opens. */
export const CA_DEVICE_PATH = '/sdcard/Download/capture-ca.der';
const CA_FILE_NAME = 'capture-ca.der';

/**
 * Android 11 lets no app (nor `am start` of KeyChain's install intent) install a CA: a person
 * does it in Settings → Security → Encryption & credentials → Install a certificate → CA
 * certificate (HTTP Toolkit's Android app does the same: the file saved in Downloads, then
 * Settings.ACTION_SECURITY_SETTINGS). The security screen exists on every version; the steps
 * from there are in CA_INSTALL_STEPS.
 */
const OPEN_SECURITY_SETTINGS = ['shell', 'am', 'start', '-a', 'android.settings.SECURITY_SETTINGS'];
export const CA_INSTALL_STEPS =
  'On the phone: Security → Encryption & credentials (Android 12+: under "More security ' +
  'settings") → Install a certificate → CA certificate → Downloads → capture-ca.der';

const HOST_NAME = /^[A-Za-z0-9.-]+$/;
/** Words the phone's /system/bin/sh takes literally; anything else is single-quoted. */
const PLAIN_SHELL_WORD = /^[A-Za-z0-9_.,:/=@%+-]+$/;
/** Without shell_v2, adb exits 0 whatever the phone's command did: its output tells. */
const DEVICE_COMMAND_FAILED = /^(Error|Exception|Security exception|java\.|\/system\/bin\/sh:)/m;

export class AndroidProxySetup {
  private readonly options: AndroidProxySetupOptions;

  constructor(options: AndroidProxySetupOptions) {
    if (options.serial !== undefined && !ADB_SERIAL.test(options.serial)) {
      throw new AndroidSetupError('bad_input', `not an adb serial: ${options.serial}`);
    }
    this.options = options;
  }

  /** Every phone adb sees, in any state. */
  async listDevices(): Promise<AdbDevice[]> {
    const result = await this.run(['devices', '-l']);
    if (result.exitCode !== 0) throw adbFailure(result);
    return parseDeviceList(result.stdout);
  }

  /** The phone to set up: the one with the chosen serial, or the only one, ready for commands. */
  async selectDevice(): Promise<AdbDevice> {
    const devices = await this.listDevices();
    const serials = devices.map((device) => device.serial);
    const wanted = this.options.serial;
    const device = wanted ? devices.find((candidate) => candidate.serial === wanted) : devices[0];
    if (wanted && !device) {
      const attached = serials.length > 0 ? ` (attached: ${serials.join(', ')})` : '';
      throw new AndroidSetupError(
        'no_device',
        `no phone with serial ${wanted} is attached${attached}`,
      );
    }
    if (!device) {
      throw new AndroidSetupError(
        'no_device',
        'no phone is attached over adb: connect one by USB with USB debugging on',
      );
    }
    if (!wanted && devices.length > 1) {
      throw new AndroidSetupError(
        'several_devices',
        `several phones are attached (${serials.join(', ')}): choose one by its serial`,
        { serials },
      );
    }
    if (device.state === 'unauthorized' || device.state === 'authorizing') {
      throw new AndroidSetupError(
        'device_unauthorized',
        `phone ${device.serial} has not allowed USB debugging from this computer: unlock it and ` +
          'accept the "Allow USB debugging?" prompt',
      );
    }
    if (device.state !== 'device') {
      throw new AndroidSetupError(
        'device_offline',
        `phone ${device.serial} is ${device.state}: reconnect its USB cable, unlock it and accept ` +
          'the USB debugging prompt',
      );
    }
    return device;
  }

  /**
   * Points the phone at the proxy. Order matters: the tunnels exist before the proxy setting
   * sends traffic into them, and the set-up page opens last so it is in front and loads at once
   * (opening it binds the device port to the phone's address); Back then shows the CA screen.
   */
  async connect(plan: ProxyConnectPlan): Promise<AndroidSetupReport> {
    const setupUrl = httpUrl(plan.setupUrl, 'setup URL');
    const proxy = `${hostName(plan.proxyHost)}:${portNumber(plan.port)}`;
    const managementPort = portNumber(plan.managementPort ?? defaultPort(setupUrl));
    const device = await this.selectDevice();
    const commands: string[][] = [];
    const adb = async (args: string[]) => {
      commands.push(args);
      await this.runOnDevice(device.serial, args).catch((error: unknown) => {
        throw withoutSetupLink(error, setupUrl.href);
      });
    };
    if (plan.reverse) {
      for (const port of [plan.port, managementPort]) {
        await adb(['reverse', `tcp:${port}`, `tcp:${port}`]);
      }
    }
    await adb(['shell', 'settings', 'put', 'global', 'http_proxy', proxy]);
    const staging = await mkdtemp(join(tmpdir(), 'android-setup-'));
    try {
      const local = join(staging, CA_FILE_NAME);
      await writeFile(local, plan.caDer);
      await adb(['push', local, CA_DEVICE_PATH]);
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
    await adb(OPEN_SECURITY_SETTINGS);
    await adb([
      'shell',
      'am',
      'start',
      '-a',
      'android.intent.action.VIEW',
      '-d',
      quoteShellWord(setupUrl.href),
    ]);
    return { device, commands };
  }

  /**
   * Undoes connect. `:0` is what Settings writes for "no proxy" (the setting must hold a
   * host:port); the two older keys are deleted where a vendor's Settings wrote them. Every step
   * runs even when one fails; a reverse forwarding already gone is not a failure.
   */
  async revert(plan: ProxyRevertPlan): Promise<AndroidSetupReport> {
    const reversePorts = plan.reverse
      ? [portNumber(plan.port), portNumber(plan.managementPort)]
      : [];
    const device = await this.selectDevice();
    const commands: string[][] = [
      ['shell', 'settings', 'put', 'global', 'http_proxy', ':0'],
      ['shell', 'settings', 'delete', 'global', 'global_http_proxy_host'],
      ['shell', 'settings', 'delete', 'global', 'global_http_proxy_port'],
      ...reversePorts.map((port) => ['reverse', '--remove', `tcp:${port}`]),
    ];
    let firstFailure: unknown;
    for (const args of commands) {
      await this.runOnDevice(device.serial, args).catch((error: unknown) => {
        const gone =
          error instanceof AndroidSetupError &&
          /listener '[^']*' not found/.test(
            String((error.cause as CommandResult | undefined)?.stderr ?? ''),
          );
        if (!gone) firstFailure ??= error;
      });
    }
    if (firstFailure) throw firstFailure;
    return { device, commands };
  }

  private async runOnDevice(serial: string, args: string[]): Promise<void> {
    const result = await this.run(['-s', serial, ...args]);
    if (result.exitCode !== 0) throw adbFailure(result);
    const failed = args[0] === 'shell' ? DEVICE_COMMAND_FAILED.exec(result.stdout) : null;
    if (failed) {
      const line = result.stdout.slice(failed.index).split('\n')[0]?.trim();
      throw new AndroidSetupError('command_failed', `the phone refused ${args[1]}: ${line}`, {
        cause: result,
      });
    }
  }

  /**
   * `-H 127.0.0.1`: a client whose server is not "localhost" never starts one (adb 29:
   * "cannot start server on remote host"), so a missing server is reported, not replaced by a
   * daemon that would outlive us. The server listens on 127.0.0.1 either way.
   */
  private async run(args: string[]): Promise<CommandResult> {
    const { adbPath, adbServerPort } = this.options;
    const timeoutMs = this.options.commandTimeoutMs ?? 15_000;
    const result = await runCommand(
      adbPath,
      ['-H', '127.0.0.1', '-P', String(adbServerPort), ...args],
      { timeoutMs },
    ).catch((error: unknown) => {
      throw new AndroidSetupError('adb_unavailable', `cannot run ${adbPath}: is adb installed?`, {
        cause: error,
      });
    });
    if (result.timedOut) {
      throw new AndroidSetupError('timeout', `adb ${args.join(' ')} took over ${timeoutMs} ms`);
    }
    return result;
  }
}

/** adb's own errors (adb_client.cpp, transport.cpp), which it prints as `error: <reason>`. */
function adbFailure(result: CommandResult): AndroidSetupError {
  const output = `${result.stderr}\n${result.stdout}`;
  const reason =
    output
      .split('\n')
      .map((line) => line.replace(/^(adb: )?error: /, '').trim())
      .find((line) => line.length > 0 && !line.startsWith('*')) ?? 'no output';
  const options = { cause: result };
  if (/cannot connect to daemon|failed to check server version/.test(output)) {
    return new AndroidSetupError(
      'adb_unavailable',
      'no adb server is running on this computer: start one with `adb start-server`',
      options,
    );
  }
  if (/unauthorized/.test(output)) {
    return new AndroidSetupError(
      'device_unauthorized',
      'the phone has not allowed USB debugging from this computer: unlock it and accept the ' +
        '"Allow USB debugging?" prompt',
      options,
    );
  }
  if (/device '[^']*' not found|no devices\/emulators found/.test(output)) {
    return new AndroidSetupError('no_device', `adb: ${reason}`, options);
  }
  if (/offline|still (connecting|authorizing)|no permissions/.test(output)) {
    return new AndroidSetupError('device_offline', `adb: ${reason}`, options);
  }
  return new AndroidSetupError('command_failed', `adb: ${reason.slice(0, 300)}`, options);
}

/** The set-up URL holds a credential (its token): a failure naming it is retold without it. */
function withoutSetupLink(error: unknown, setupUrl: string): unknown {
  if (!(error instanceof AndroidSetupError)) return error;
  const told = `${error.message}\n${JSON.stringify(error.cause ?? null)}`;
  if (!told.includes(setupUrl)) return error;
  return new AndroidSetupError(error.code, error.message.replaceAll(setupUrl, 'the set-up page'));
}

/** POSIX sh quoting for one word of the command line `adb shell` hands the phone's shell. */
export function quoteShellWord(word: string): string {
  return PLAIN_SHELL_WORD.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

function httpUrl(value: string, what: string): URL {
  const url = URL.canParse(value) ? new URL(value) : null;
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new AndroidSetupError('bad_input', `the ${what} must be an http(s) URL`);
  }
  return url;
}

function hostName(value: string): string {
  if (!HOST_NAME.test(value)) throw new AndroidSetupError('bad_input', `not a host: ${value}`);
  return value;
}

function portNumber(value: number | undefined): number {
  if (value === undefined || !Number.isInteger(value) || value < 1 || value > 65_535) {
    throw new AndroidSetupError('bad_input', `not a TCP port: ${value}`);
  }
  return value;
}

function defaultPort(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}
