// The adb device double's transport on the wire, without adb: its answer to a host's CNXN (the
// banner adb reads its features from), and what it does with malformed or unknown messages.
// Its interplay with Debian's real adb is android-farm.test.ts.
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdbDeviceDouble } from './helpers/adb-device-double.ts';
import {
  A_CLSE,
  A_CNXN,
  A_OKAY,
  A_OPEN,
  A_VERSION_MIN,
  A_VERSION_SKIP_CHECKSUM,
  type AdbMessage,
  AdbMessageReader,
  encodeMessage,
} from './helpers/adb-wire.ts';

let device: AdbDeviceDouble;

beforeAll(async () => {
  device = await new AdbDeviceDouble().start();
});
afterAll(() => device.stop());

/** A raw host connection: sends messages, collects what the device answers, sees the close. */
async function host(): Promise<{
  socket: Socket;
  send(message: AdbMessage | Buffer): void;
  next(): Promise<AdbMessage>;
  closed: Promise<void>;
}> {
  const [hostPart, portPart] = device.serial.split(':');
  const socket = connect({ host: hostPart, port: Number(portPart) });
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  const reader = new AdbMessageReader(1024 * 1024, () => A_VERSION_SKIP_CHECKSUM);
  const queue: AdbMessage[] = [];
  const waiters: Array<(message: AdbMessage) => void> = [];
  socket.on('data', (chunk: Buffer) => {
    for (const message of reader.push(chunk)) {
      const waiter = waiters.shift();
      if (waiter) waiter(message);
      else queue.push(message);
    }
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return {
    socket,
    send: (message) => socket.write(Buffer.isBuffer(message) ? message : encodeMessage(message)),
    next: () =>
      new Promise((resolve) => {
        const queued = queue.shift();
        if (queued) resolve(queued);
        else waiters.push(resolve);
      }),
    closed,
  };
}

const HOST_CNXN: AdbMessage = {
  command: A_CNXN,
  arg0: A_VERSION_MIN,
  arg1: 4096,
  data: Buffer.from('host::features=cmd'),
};

describe('the adb device double on the wire', () => {
  it('answers a CNXN with its own, advertising cmd and no shell_v2', async () => {
    const connection = await host();
    connection.send(HOST_CNXN);
    const answer = await connection.next();
    expect(answer.command).toBe(A_CNXN);
    expect(answer.arg0).toBe(A_VERSION_SKIP_CHECKSUM);
    const banner = answer.data.toString();
    expect(banner).toMatch(/^device::.*features=cmd$/);
    expect(banner).not.toContain('shell_v2');
    connection.socket.destroy();
  });

  it('refuses an unknown service with CLSE naming the host stream', async () => {
    const connection = await host();
    connection.send(HOST_CNXN);
    await connection.next();
    connection.send({ command: A_OPEN, arg0: 7, arg1: 0, data: Buffer.from('reboot:\0') });
    const refused = await connection.next();
    expect(refused).toMatchObject({ command: A_CLSE, arg0: 0, arg1: 7 });
    connection.send({
      command: A_OPEN,
      arg0: 8,
      arg1: 0,
      data: Buffer.from('shell:pm list packages -3\0'),
    });
    const opened = await connection.next();
    expect(opened).toMatchObject({ command: A_OKAY, arg1: 8 });
    connection.socket.destroy();
  });

  it('drops a connection whose message has a bad magic', async () => {
    const connection = await host();
    const bad = encodeMessage(HOST_CNXN);
    bad.writeUInt32LE(0, 20);
    connection.send(bad);
    await connection.closed;
  });

  it('drops a pre-1.0.1 peer whose checksum does not match its payload', async () => {
    const connection = await host();
    const bad = encodeMessage(HOST_CNXN);
    bad.writeUInt32LE(bad.readUInt32LE(16) + 1, 16);
    connection.send(bad);
    await connection.closed;
  });
});
