// A fake Android device for the farm tests: it speaks the adb transport protocol (AOSP
// system/core/adb/protocol.txt: CNXN, OPEN, OKAY, WRTE, CLSE) on a real TCP socket on 127.0.0.1,
// as `adbd` does over TCP, so Debian's real adb server reaches it with `adb connect`. Behind the
// transport sits a tiny package manager: an in-memory package list fed by real APK bytes, parsed
// with Debian's aapt as the real one parses them.
//
// What it implements is what adb 29 uses given the features it advertises (`features=cmd`):
// - `adb install` streams: OPEN `exec:cmd package 'install' ['-r'] -S <size>`, the APK's bytes,
//   then one status line ("Success" / "Failure [REASON]") and close (adb_install.cpp
//   install_app_streamed). Without `cmd` adb 29 would push over `sync:` and run `shell:pm install`.
// - `adb uninstall <pkg>` runs `shell:cmd package 'uninstall' '<pkg>'` (no `shell_v2` advertised,
//   so a raw shell stream whose output is the status line).
// - `adb shell pm list packages [-3]`: `shell:pm list packages ...`, one `package:<name>` a line.
// Authentication: the double answers the host's CNXN with its own CNXN at once, as a device with
// `ro.adb.secure=0` (an emulator, a userdebug build) does; it never sends AUTH, so no key is
// needed. Any other service is refused with CLSE, as adbd refuses an unknown one.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  A_CLSE,
  A_CNXN,
  A_OKAY,
  A_OPEN,
  A_VERSION_MIN,
  A_VERSION_SKIP_CHECKSUM,
  A_WRTE,
  type AdbMessage,
  AdbMessageReader,
  encodeMessage,
} from './adb-wire.ts';
import { splitShellWords } from './shell-words.ts';

const run = promisify(execFile);

/** What the double advertises as its largest payload (adbd's MAX_PAYLOAD is 1 MiB; less is fine). */
const DEVICE_MAX_PAYLOAD = 256 * 1024;
const BANNER =
  'device::ro.product.name=capture_double;ro.product.model=Capture Double;' +
  'ro.product.device=capture_double;features=cmd';
/** Packages every device has; `pm list packages -3` leaves them out. */
const SYSTEM_PACKAGES = ['android', 'com.android.shell', 'com.android.settings'];

export interface InstalledPackage {
  name: string;
  versionCode: number;
  versionName: string;
}

export interface AdbDeviceDoubleOptions {
  aaptPath?: string;
}

/** One adb stream as the device sees it: its id, the host's, and a flow-controlled write queue. */
class DeviceStream {
  private readonly queue: Buffer[] = [];
  private awaitingOkay = false;
  private closing = false;
  closed = false;
  onData: (data: Buffer) => void = () => {};

  readonly localId: number;
  readonly remoteId: number;
  private readonly send: (message: AdbMessage) => void;
  private readonly maxPayload: () => number;
  private readonly forget: () => void;

  constructor(
    localId: number,
    remoteId: number,
    send: (message: AdbMessage) => void,
    maxPayload: () => number,
    forget: () => void,
  ) {
    this.localId = localId;
    this.remoteId = remoteId;
    this.send = send;
    this.maxPayload = maxPayload;
    this.forget = forget;
  }

  write(data: Buffer): void {
    for (let offset = 0; offset < data.length; offset += this.maxPayload()) {
      this.queue.push(data.subarray(offset, offset + this.maxPayload()));
    }
    this.pump();
  }

  close(): void {
    this.closing = true;
    this.pump();
  }

  /** protocol.txt: a WRTE may not be followed by another until the peer's OKAY for it. */
  acknowledged(): void {
    this.awaitingOkay = false;
    this.pump();
  }

  closedByHost(): void {
    this.closed = true;
    this.forget();
  }

  private pump(): void {
    if (this.closed || this.awaitingOkay) return;
    const next = this.queue.shift();
    if (next) {
      this.awaitingOkay = true;
      this.send({ command: A_WRTE, arg0: this.localId, arg1: this.remoteId, data: next });
    } else if (this.closing) {
      this.closed = true;
      this.send({
        command: A_CLSE,
        arg0: this.localId,
        arg1: this.remoteId,
        data: Buffer.alloc(0),
      });
      this.forget();
    }
  }
}

export class AdbDeviceDouble {
  readonly packages = new Map<string, InstalledPackage>();
  /** Every service the host opened, in order (what adb really asked for). */
  readonly services: string[] = [];
  /** The next install answers this failure reason instead of installing (e.g. a full disk). */
  failNextInstallWith: string | null = null;
  /** Installs take the bytes and never answer (a device stuck verifying), for timeouts. */
  stallInstalls = false;
  private readonly aaptPath: string;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private port = 0;

  constructor(options: AdbDeviceDoubleOptions = {}) {
    this.aaptPath = options.aaptPath ?? '/usr/bin/aapt';
    this.server = createServer((socket) => this.serve(socket));
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = this.server.address();
    if (address === null || typeof address === 'string') throw new Error('no TCP address');
    this.port = address.port;
    return this;
  }

  /** `host:port` as `adb connect` takes it, and the serial adb then names the device by. */
  get serial(): string {
    return `127.0.0.1:${this.port}`;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    let version = A_VERSION_MIN;
    let hostMaxPayload = 4096;
    let nextLocalId = 1;
    const streams = new Map<number, DeviceStream>();
    // The host may send no more than the payload size this side advertised.
    const reader = new AdbMessageReader(DEVICE_MAX_PAYLOAD, () => version);
    const send = (message: AdbMessage) => {
      if (!socket.destroyed) socket.write(encodeMessage(message));
    };
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk: Buffer) => {
      let messages: AdbMessage[];
      try {
        messages = reader.push(chunk);
      } catch {
        socket.destroy();
        return;
      }
      for (const message of messages) {
        switch (message.command) {
          case A_CNXN:
            // protocol.txt: both ends then use the smaller version and payload size.
            version = Math.min(message.arg0, A_VERSION_SKIP_CHECKSUM);
            hostMaxPayload = Math.min(message.arg1, DEVICE_MAX_PAYLOAD);
            send({
              command: A_CNXN,
              arg0: A_VERSION_SKIP_CHECKSUM,
              arg1: DEVICE_MAX_PAYLOAD,
              data: Buffer.from(BANNER),
            });
            break;
          case A_OPEN: {
            const service = message.data.toString('utf8').replace(/\0$/, '');
            this.services.push(service);
            const handler = this.route(service);
            if (!handler) {
              send({ command: A_CLSE, arg0: 0, arg1: message.arg0, data: Buffer.alloc(0) });
              break;
            }
            const localId = nextLocalId++;
            const stream = new DeviceStream(
              localId,
              message.arg0,
              send,
              () => hostMaxPayload,
              () => streams.delete(localId),
            );
            streams.set(localId, stream);
            send({ command: A_OKAY, arg0: localId, arg1: message.arg0, data: Buffer.alloc(0) });
            handler(stream);
            break;
          }
          case A_WRTE: {
            const stream = streams.get(message.arg1);
            if (!stream) break;
            send({
              command: A_OKAY,
              arg0: stream.localId,
              arg1: stream.remoteId,
              data: Buffer.alloc(0),
            });
            stream.onData(message.data);
            break;
          }
          case A_OKAY:
            streams.get(message.arg1)?.acknowledged();
            break;
          case A_CLSE:
            streams.get(message.arg1)?.closedByHost();
            break;
          default:
            // AUTH is never asked for (see the header); SYNC and the rest are not adbd's to get.
            break;
        }
      }
    });
  }

  /** The service handler for `exec:` and `shell:` command lines of the package manager. */
  private route(service: string): ((stream: DeviceStream) => void) | null {
    const match = /^(exec|shell):(.*)$/s.exec(service);
    if (!match) return null;
    let words: string[];
    try {
      words = splitShellWords(match[2] as string);
    } catch {
      return null;
    }
    // `cmd package ARGS` and `pm ARGS` reach the same package manager service.
    const args =
      words[0] === 'cmd' && words[1] === 'package'
        ? words.slice(2)
        : words[0] === 'pm'
          ? words.slice(1)
          : null;
    if (!args) return null;
    return (stream) => this.runPackageManager(stream, args);
  }

  private runPackageManager(stream: DeviceStream, args: string[]): void {
    const reply = (text: string) => {
      stream.write(Buffer.from(text));
      stream.close();
    };
    const [verb, ...rest] = args;
    if (verb === 'list' && rest[0] === 'packages') {
      const thirdPartyOnly = rest.includes('-3');
      const names = [
        ...(thirdPartyOnly ? [] : SYSTEM_PACKAGES),
        ...[...this.packages.keys()].sort(),
      ];
      reply(names.map((name) => `package:${name}\n`).join(''));
    } else if (verb === 'uninstall') {
      const name = rest.at(-1);
      if (name && this.packages.delete(name)) reply('Success\n');
      else reply('Failure [DELETE_FAILED_INTERNAL_ERROR]\n');
    } else if (verb === 'install') {
      this.receiveInstall(stream, rest, reply);
    } else {
      reply(`Unknown command: ${verb ?? ''}\n`);
    }
  }

  /** `install [-r] -S <size>`: the APK arrives on the stream; the answer is one status line. */
  private receiveInstall(stream: DeviceStream, args: string[], reply: (text: string) => void) {
    const sizeAt = args.indexOf('-S');
    const size = sizeAt >= 0 ? Number(args[sizeAt + 1]) : Number.NaN;
    if (!Number.isSafeInteger(size) || size < 0) {
      reply('Error: APK content must be streamed with -S <size>\n');
      return;
    }
    const replace = args.includes('-r');
    const chunks: Buffer[] = [];
    let received = 0;
    stream.onData = (data) => {
      if (received >= size) return;
      chunks.push(data);
      received += data.length;
      if (received < size) return;
      stream.onData = () => {};
      if (this.stallInstalls) return;
      this.install(Buffer.concat(chunks).subarray(0, size), replace).then(reply, (error: Error) =>
        reply(`Failure [INSTALL_FAILED_INTERNAL_ERROR: ${error.message}]\n`),
      );
    };
    if (size === 0) stream.onData(Buffer.alloc(0));
  }

  private async install(apk: Buffer, replace: boolean): Promise<string> {
    const directory = await mkdtemp(join(tmpdir(), 'adb-double-'));
    try {
      const file = join(directory, 'base.apk');
      await writeFile(file, apk);
      const badging = await run(this.aaptPath, ['dump', 'badging', file]).catch(() => null);
      const line = /^package: name='([^']+)' versionCode='(\d*)' versionName='([^']*)'/m.exec(
        badging?.stdout ?? '',
      );
      if (!line) return 'Failure [INSTALL_PARSE_FAILED_NOT_APK: Failed to parse base.apk]\n';
      const installed: InstalledPackage = {
        name: line[1] as string,
        versionCode: Number(line[2] || 0),
        versionName: line[3] as string,
      };
      if (this.failNextInstallWith) {
        const reason = this.failNextInstallWith;
        this.failNextInstallWith = null;
        return `Failure [${reason}]\n`;
      }
      const existing = this.packages.get(installed.name);
      if (existing && !replace) {
        return `Failure [INSTALL_FAILED_ALREADY_EXISTS: Attempt to re-install ${installed.name} without first uninstalling.]\n`;
      }
      if (existing && existing.versionCode > installed.versionCode) {
        return `Failure [INSTALL_FAILED_VERSION_DOWNGRADE]\n`;
      }
      this.packages.set(installed.name, installed);
      return 'Success\n';
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  }
}
