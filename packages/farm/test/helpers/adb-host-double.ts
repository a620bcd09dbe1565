// An adb server double: it speaks adb's host ("smart socket") protocol on 127.0.0.1 as the adb
// server does on port 5037 (AOSP packages/modules/adb SERVICES.TXT, protocol.txt, SYNC.TXT), so
// Debian's real adb client (`adb -H 127.0.0.1 -P <port> -s <serial> …`) runs against it. Behind
// it sit simulated phones: global settings, pushed files, reverse forwardings, and a browser that
// opens `am start -a android.intent.action.VIEW -d <url>` through the phone's http_proxy.
//
// What adb 29.0.6's client sends, found by running it against a recording server:
// - Every run first opens a connection for `host:version` and waits for the server to close it
//   after `OKAY` + `0004` + `0029` (ADB_SERVER_VERSION 41, in hex). Another version makes the
//   client send `host:kill` and fork a server of its own, so this one answers 41.
// - `devices [-l]`: `host:devices` or `host:devices-l`, answered OKAY + length + listing, close.
// - `shell` and `push` ask `host-serial:<s>:features` on a connection of their own (empty here:
//   no shell_v2, stat_v2, cmd or abb, so the client falls back to the plain services below).
// - Commands for a device open `host:tport:serial:<s>`, answered OKAY + the transport id (8 bytes,
//   little-endian), then name the service on the same connection:
//   `shell:<arguments joined by spaces, unquoted>` (OKAY, the raw output, close);
//   `sync:` (OKAY, then STAT <path>; SEND "<path>,<mode>"; DATA...; DONE <mtime> → OKAY; QUIT);
//   `reverse:forward:tcp:A;tcp:B` and `reverse:killforward:tcp:A` (OKAY as the stream opens, then
//   OKAY or FAIL as the device's status).
// - A refusal is `FAIL` + length + message; the client prints `error: <message>` and exits 1.
import { request } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { splitShellWords } from './shell-words.ts';

/** adb's ADB_SERVER_VERSION (41) as the server writes it: four hex digits. */
const SERVER_VERSION = '0029';
/** What the real server says for a device that has not accepted this host's key. */
const UNAUTHORIZED =
  "device unauthorized.\nThis adb server's $ADB_VENDOR_KEYS is not set\n" +
  "Try 'adb kill-server' if that seems wrong.\n" +
  'Otherwise check for a confirmation dialog on your device.';
/** Directories a phone has, for `STAT` (push asks whether its target is one). */
const DIRECTORIES = new Set(['/sdcard', '/sdcard/Download', '/data/local/tmp']);
const S_IFDIR = 0o040000;
const S_IFREG = 0o100000;

export interface SimulatedPhone {
  serial: string;
  state: 'device' | 'unauthorized' | 'offline';
  model: string;
  transportId: number;
  /** `settings … global`. */
  settings: Map<string, string>;
  files: Map<string, Buffer>;
  /** Reverse forwardings: phone side → host side. */
  reverses: Map<string, string>;
}

export interface BrowserVisit {
  serial: string;
  url: string;
  /** The http_proxy setting the request went through; null: straight to the URL's host. */
  proxy: string | null;
  status: number | null;
  error: string | null;
}

function hexLength(text: string): string {
  return Buffer.byteLength(text).toString(16).padStart(4, '0');
}

export class AdbHostDouble {
  readonly phones = new Map<string, SimulatedPhone>();
  /** Every host request, in order, as the client framed it. */
  readonly requests: string[] = [];
  /** What each phone was asked to do, as adb command lines (`shell settings put …`). */
  readonly commands: Array<{ serial: string; command: string }> = [];
  readonly visits: BrowserVisit[] = [];
  /** The next shell command prints this instead of running (a phone refusing a setting). */
  failNextShellWith: string | null = null;
  private readonly server: Server = createServer((socket) => this.serve(socket));
  private readonly sockets = new Set<Socket>();
  private readonly browsing = new Set<Promise<void>>();
  private nextTransportId = 1;
  port = 0;

  /** `port`: one chosen earlier (a tool server configured before the double starts). */
  async start(port = 0): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => resolve());
    });
    const address = this.server.address();
    if (address === null || typeof address === 'string') throw new Error('no TCP address');
    this.port = address.port;
    return this;
  }

  async stop(): Promise<void> {
    await this.settled();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  attach(
    serial: string,
    options: { state?: SimulatedPhone['state']; model?: string } = {},
  ): SimulatedPhone {
    const phone: SimulatedPhone = {
      serial,
      state: options.state ?? 'device',
      model: options.model ?? 'Pixel 7',
      transportId: this.nextTransportId++,
      settings: new Map(),
      files: new Map(),
      reverses: new Map(),
    };
    this.phones.set(serial, phone);
    return phone;
  }

  detach(serial: string): void {
    this.phones.delete(serial);
  }

  commandsOf(serial: string): string[] {
    return this.commands.filter((entry) => entry.serial === serial).map((entry) => entry.command);
  }

  /** Resolves once every page the simulated browsers opened has loaded or failed. */
  async settled(): Promise<void> {
    while (this.browsing.size > 0) await Promise.all([...this.browsing]);
  }

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    let pending = Buffer.alloc(0);
    let transport: SimulatedPhone | null = null;
    let sync: ((chunk: Buffer) => void) | null = null;
    socket.on('data', (chunk: Buffer) => {
      if (sync) {
        sync(chunk);
        return;
      }
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && !sync && !socket.writableEnded) {
        const length = Number.parseInt(pending.subarray(0, 4).toString('latin1'), 16);
        if (!Number.isInteger(length) || pending.length < 4 + length) return;
        const service = pending.subarray(4, 4 + length).toString('utf8');
        pending = pending.subarray(4 + length);
        this.requests.push(service);
        if (transport) {
          sync = this.serveDevice(socket, transport, service);
          if (sync && pending.length > 0) sync(pending);
        } else {
          transport = this.serveHost(socket, service);
        }
      }
    });
  }

  /** A host service; returns the phone when the connection now belongs to its transport. */
  private serveHost(socket: Socket, service: string): SimulatedPhone | null {
    if (service === 'host:version') return this.answer(socket, SERVER_VERSION);
    if (service === 'host:kill') return this.end(socket);
    if (service === 'host:devices' || service === 'host:devices-l') {
      return this.answer(socket, this.listing(service.endsWith('-l')));
    }
    const features = /^host(?:-serial:(.+))?:features$/.exec(service);
    if (features) {
      const phone = this.pick(socket, features[1]);
      return phone ? this.answer(socket, '') : null;
    }
    const tport = /^host:(tport|transport):?(?:serial:)?(.*)$/.exec(service);
    const any = service === 'host:tport:any' || service === 'host:transport-any';
    if (tport || any) {
      const phone = this.pick(socket, any ? undefined : tport?.[2]);
      if (!phone) return null;
      socket.write('OKAY');
      if (tport?.[1] === 'tport' || service === 'host:tport:any') {
        const id = Buffer.alloc(8);
        id.writeBigUInt64LE(BigInt(phone.transportId));
        socket.write(id);
      }
      return phone;
    }
    return this.fail(socket, `unknown host service ${service}`);
  }

  /** A device service on a transport; returns a sync receiver for `sync:`. */
  private serveDevice(
    socket: Socket,
    phone: SimulatedPhone,
    service: string,
  ): ((chunk: Buffer) => void) | null {
    const record = (command: string) => this.commands.push({ serial: phone.serial, command });
    if (service.startsWith('shell:')) {
      socket.write('OKAY');
      socket.end(this.runShell(phone, service.slice('shell:'.length), record));
      return null;
    }
    if (service === 'sync:') {
      socket.write('OKAY');
      return this.receiveSync(socket, phone, record);
    }
    const forward = /^reverse:forward:(norebind:)?([^;]+);(.+)$/.exec(service);
    if (forward) {
      const [, norebind, local, remote] = forward as unknown as [string, string, string, string];
      record(`reverse ${norebind ? '--no-rebind ' : ''}${local} ${remote}`);
      socket.write('OKAY');
      if (norebind && phone.reverses.has(local)) return this.fail(socket, 'cannot rebind');
      phone.reverses.set(local, remote);
      socket.end('OKAY');
      return null;
    }
    const kill = /^reverse:killforward:(.+)$/.exec(service);
    if (kill) {
      const local = kill[1] as string;
      record(`reverse --remove ${local}`);
      socket.write('OKAY');
      if (!phone.reverses.delete(local)) return this.fail(socket, `listener '${local}' not found`);
      socket.end('OKAY');
      return null;
    }
    // adbd closes a stream it has no service for; the server reports that as "closed".
    this.fail(socket, 'closed');
    return null;
  }

  private runShell(phone: SimulatedPhone, line: string, record: (command: string) => void): string {
    const words = splitShellWords(line);
    record(`shell ${words.join(' ')}`);
    if (this.failNextShellWith !== null) {
      const output = this.failNextShellWith;
      this.failNextShellWith = null;
      return output;
    }
    const [program, verb, namespace, key, value] = words;
    if (program === 'settings' && namespace === 'global' && key) {
      if (verb === 'put' && value !== undefined) {
        phone.settings.set(key, value);
        return '';
      }
      if (verb === 'get') return `${phone.settings.get(key) ?? 'null'}\n`;
      if (verb === 'delete') return `Deleted ${phone.settings.delete(key) ? 1 : 0} rows\n`;
    }
    if (program === 'am' && verb === 'start') {
      const action = words[words.indexOf('-a') + 1];
      const data = words.includes('-d') ? words[words.indexOf('-d') + 1] : undefined;
      if (action === 'android.intent.action.VIEW' && data) this.browse(phone, data);
      return `Starting: Intent { act=${action}${data ? ` dat=${data}` : ''} }\n`;
    }
    return `/system/bin/sh: ${program ?? ''}: not found\n`;
  }

  /** SYNC.TXT v1: 8-byte headers (id, little-endian length or mtime), payloads after them. */
  private receiveSync(
    socket: Socket,
    phone: SimulatedPhone,
    record: (command: string) => void,
  ): (chunk: Buffer) => void {
    let pending = Buffer.alloc(0);
    let receiving: { path: string; chunks: Buffer[] } | null = null;
    const reply = (id: string, ...values: number[]) => {
      const message = Buffer.alloc(4 + 4 * values.length);
      message.write(id, 'latin1');
      for (const [index, value] of values.entries()) {
        message.writeUInt32LE(value >>> 0, 4 + 4 * index);
      }
      socket.write(message);
    };
    return (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 8) {
        const id = pending.toString('latin1', 0, 4);
        const argument = pending.readUInt32LE(4);
        if (id === 'DONE' || id === 'QUIT') {
          pending = pending.subarray(8);
          if (id === 'QUIT') {
            socket.end();
            return;
          }
          if (receiving) {
            phone.files.set(receiving.path, Buffer.concat(receiving.chunks));
            record(`push ${receiving.path}`);
          }
          receiving = null;
          reply('OKAY', 0);
          continue;
        }
        if (pending.length < 8 + argument) return;
        const payload = pending.subarray(8, 8 + argument);
        pending = pending.subarray(8 + argument);
        if (id === 'STAT') {
          const path = payload.toString('utf8');
          const file = phone.files.get(path);
          if (DIRECTORIES.has(path)) reply('STAT', S_IFDIR | 0o771, 4096, 0);
          else reply('STAT', file ? S_IFREG | 0o644 : 0, file?.length ?? 0, 0);
        } else if (id === 'SEND') {
          const target = payload.toString('utf8');
          receiving = { path: target.slice(0, target.lastIndexOf(',')), chunks: [] };
        } else if (id === 'DATA' && receiving) {
          receiving.chunks.push(Buffer.from(payload));
        } else {
          const message = `unsupported sync request ${id}`;
          const header = Buffer.alloc(8);
          header.write('FAIL', 'latin1');
          header.writeUInt32LE(Buffer.byteLength(message), 4);
          socket.end(Buffer.concat([header, Buffer.from(message)]));
          return;
        }
      }
    };
  }

  /** The phone's browser: GET through the proxy in absolute form, as browsers send it. */
  private browse(phone: SimulatedPhone, url: string): void {
    const setting = phone.settings.get('http_proxy') ?? '';
    const proxy = /^(.+):(\d+)$/.exec(setting);
    const viaProxy = proxy && proxy[2] !== '0' ? { host: proxy[1], port: Number(proxy[2]) } : null;
    const visit: BrowserVisit = {
      serial: phone.serial,
      url,
      proxy: viaProxy ? setting : null,
      status: null,
      error: null,
    };
    this.visits.push(visit);
    const target = new URL(url);
    const loading = new Promise<void>((resolve) => {
      const sent = request({
        host: viaProxy?.host ?? target.hostname,
        port: viaProxy?.port ?? Number(target.port || 80),
        method: 'GET',
        path: viaProxy ? target.href : `${target.pathname}${target.search}`,
        headers: { host: target.host, accept: 'text/html', 'user-agent': 'AdbHostDouble' },
        timeout: 5_000,
      });
      sent.on('response', (response) => {
        visit.status = response.statusCode ?? null;
        response.resume();
        response.on('end', resolve);
        response.on('error', resolve);
      });
      sent.on('timeout', () => sent.destroy(new Error('timed out')));
      sent.on('error', (error) => {
        visit.error = error.message;
        resolve();
      });
      sent.end();
    });
    this.browsing.add(loading);
    void loading.then(() => this.browsing.delete(loading));
  }

  private listing(long: boolean): string {
    return [...this.phones.values()]
      .map((phone) =>
        long
          ? `${phone.serial.padEnd(22)} ${phone.state} usb:1-1 product:double ` +
            `model:${phone.model.replaceAll(' ', '_')} device:double ` +
            `transport_id:${phone.transportId}\n`
          : `${phone.serial}\t${phone.state}\n`,
      )
      .join('');
  }

  /** The phone a request names (or the only one), failing the request as the server would. */
  private pick(socket: Socket, serial: string | undefined): SimulatedPhone | null {
    const phones = [...this.phones.values()];
    if (serial === undefined && phones.length > 1) {
      return this.fail(socket, 'more than one device/emulator');
    }
    const phone = serial === undefined ? phones[0] : this.phones.get(serial);
    if (!phone) {
      return this.fail(
        socket,
        serial === undefined ? 'no devices/emulators found' : `device '${serial}' not found`,
      );
    }
    if (phone.state === 'unauthorized') return this.fail(socket, UNAUTHORIZED);
    if (phone.state === 'offline') return this.fail(socket, 'device offline');
    return phone;
  }

  private answer(socket: Socket, payload: string): null {
    socket.end(`OKAY${hexLength(payload)}${payload}`);
    return null;
  }

  private fail(socket: Socket, message: string): null {
    socket.end(`FAIL${hexLength(message)}${message}`);
    return null;
  }

  private end(socket: Socket): null {
    socket.end();
    return null;
  }
}
