// HTTP/2 to origins and gRPC through interception: a @grpc/grpc-js client sends its
// calls through the proxy (CONNECT, TLS intercepted with the project CA, HTTP/2 by ALPN) to a
// grpc-js server on loopback (TLS from another CA, HTTP/2 only). Unary, server-streaming,
// client-streaming and bidirectional calls work end to end, an error status arrives in the
// trailers, and each call is captured with its service, method, status and message sizes. An
// HTTP/2 client to an HTTP/1.1-only origin still works (the HTTP/1.1 path).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CaptureWriter,
  type CertificateAuthority,
  LeafCertificateCache,
  loadOrCreateCertificateAuthority,
  type RunningProxy,
  startProxy,
} from '../src/index.ts';
import { type CaptureDatabase, startCaptureDatabase } from './helpers/capture-database.ts';
import { curl } from './helpers/curl.ts';
import { LOOPBACK_DESTINATIONS, type Origins, startOrigins } from './helpers/origins.ts';

const logger = pino({ level: process.env.STACK_LOG_LEVEL ?? 'silent' });

const raw = {
  requestSerialize: (value: Buffer) => value,
  requestDeserialize: (value: Buffer) => value,
  responseSerialize: (value: Buffer) => value,
  responseDeserialize: (value: Buffer) => value,
};
const SERVICE = {
  unary: { path: '/test.Echo/Unary', requestStream: false, responseStream: false, ...raw },
  fail: { path: '/test.Echo/Fail', requestStream: false, responseStream: false, ...raw },
  serverStream: {
    path: '/test.Echo/ServerStream',
    requestStream: false,
    responseStream: true,
    ...raw,
  },
  clientStream: {
    path: '/test.Echo/ClientStream',
    requestStream: true,
    responseStream: false,
    ...raw,
  },
  bidi: { path: '/test.Echo/Bidi', requestStream: true, responseStream: true, ...raw },
} satisfies grpc.ServiceDefinition;

// biome-ignore lint/suspicious/noExplicitAny: grpc-js generic clients are untyped by design
type EchoClient = grpc.Client & Record<keyof typeof SERVICE, any>;

let database: CaptureDatabase;
let caDir: string;
let caFile: string;
let ca: CertificateAuthority;
let origins: Origins;
let writer: CaptureWriter;
let proxy: RunningProxy;
let server: grpc.Server;
let grpcPort: number;
let client: EchoClient;

beforeAll(async () => {
  database = await startCaptureDatabase(logger);
  caDir = mkdtempSync(join(tmpdir(), 'proxy-ca-'));
  ca = loadOrCreateCertificateAuthority(caDir);
  caFile = join(caDir, 'trust.pem');
  writeFileSync(caFile, ca.certPem);
  origins = await startOrigins(['127.0.0.1']);
  writer = database.writer();
  proxy = await startProxy({
    port: 0,
    writer,
    allowlist: ['127.0.0.0/8'],
    destinations: LOOPBACK_DESTINATIONS,
    ca,
    upstreamCa: [origins.originCa.certPem],
    logger,
  });

  const leaf = await (await LeafCertificateCache.create(origins.originCa)).contextFor('localhost');
  server = new grpc.Server();
  server.addService(SERVICE, {
    unary: (call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) =>
      done(null, Buffer.concat([Buffer.from('echo:'), call.request])),
    fail: (_call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) =>
      done({ code: grpc.status.NOT_FOUND, details: 'no such thing' }),
    serverStream: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      const count = Number(call.request.toString());
      for (let index = 0; index < count; index += 1)
        call.write(Buffer.alloc(100 * (index + 1), 0x61));
      call.end();
    },
    clientStream: (
      call: grpc.ServerReadableStream<Buffer, Buffer>,
      done: grpc.sendUnaryData<Buffer>,
    ) => {
      let total = 0;
      call.on('data', (chunk: Buffer) => {
        total += chunk.length;
      });
      call.on('end', () => done(null, Buffer.from(String(total))));
    },
    bidi: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on('data', (chunk: Buffer) => call.write(Buffer.concat([Buffer.from('re:'), chunk])));
      call.on('end', () => call.end());
    },
  });
  grpcPort = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      '127.0.0.1:0',
      grpc.ServerCredentials.createSsl(null, [
        { private_key: Buffer.from(leaf.keyPem), cert_chain: Buffer.from(leaf.certPem) },
      ]),
      (error, port) => (error ? reject(error) : resolve(port)),
    ),
  );

  // grpc-js's own proxy support: CONNECT to the proxy, then TLS (h2) to the target through it.
  process.env.grpc_proxy = `http://127.0.0.1:${proxy.port}`;
  delete process.env.no_grpc_proxy;
  delete process.env.no_proxy;
  const Client = grpc.makeGenericClientConstructor(SERVICE, 'Echo');
  client = new Client(
    `localhost:${grpcPort}`,
    grpc.credentials.createSsl(Buffer.from(ca.certPem)),
  ) as unknown as EchoClient;
}, 60_000);

afterAll(async () => {
  client?.close();
  server?.forceShutdown();
  delete process.env.grpc_proxy;
  await proxy?.stop();
  await writer?.stop();
  await origins?.stop();
  await database?.stop();
  rmSync(caDir, { recursive: true, force: true });
});

const unary = (method: 'unary' | 'fail', body: Buffer) =>
  new Promise<Buffer>((resolve, reject) =>
    client[method](body, (error: grpc.ServiceError | null, reply: Buffer) =>
      error ? reject(error) : resolve(reply),
    ),
  );

interface GrpcCapture {
  service: string;
  method: string;
  status: number;
  message: string | null;
  requestMessages: { messages: number; sizes: number[] };
  responseMessages: { messages: number; sizes: number[] };
}

const captured = async (path: string) => {
  const entry = await database.entryWhere('path', path);
  return entry as typeof entry & { payload: { grpc: GrpcCapture; upstreamHttpVersion?: string } };
};

describe('gRPC through interception', () => {
  it('answers a unary call, captured with service, method, status and sizes', async () => {
    const reply = await unary('unary', Buffer.from('hello'));
    expect(reply.toString()).toBe('echo:hello');
    const entry = await captured('/test.Echo/Unary');
    expect(entry.kind).toBe('http');
    expect(entry.payload).toMatchObject({
      httpVersion: 'HTTP/2.0',
      upstreamHttpVersion: 'HTTP/2.0',
      statusCode: 200,
      tls: { intercepted: true, alpn: 'h2' },
    });
    expect(entry.payload.grpc).toMatchObject({
      service: 'test.Echo',
      method: 'Unary',
      status: 0,
      requestMessages: { messages: 1, sizes: [5] },
      responseMessages: { messages: 1, sizes: [10] },
    });
    expect(entry.payload.responseTrailers).toContainEqual(['grpc-status', '0']);
  });

  it('relays an error status from the trailers', async () => {
    await expect(unary('fail', Buffer.from('x'))).rejects.toMatchObject({
      code: grpc.status.NOT_FOUND,
      details: 'no such thing',
    });
    const entry = await captured('/test.Echo/Fail');
    expect(entry.payload.grpc).toMatchObject({ status: 5, message: 'no such thing' });
  });

  it('streams from the server', async () => {
    const sizes: number[] = [];
    await new Promise<void>((resolve, reject) => {
      const call = client.serverStream(Buffer.from('5'));
      call.on('data', (chunk: Buffer) => sizes.push(chunk.length));
      call.on('error', reject);
      call.on('end', resolve);
    });
    expect(sizes).toEqual([100, 200, 300, 400, 500]);
    const entry = await captured('/test.Echo/ServerStream');
    expect(entry.payload.grpc).toMatchObject({
      status: 0,
      responseMessages: { messages: 5, sizes: [100, 200, 300, 400, 500] },
    });
  });

  it('streams from the client', async () => {
    const reply = await new Promise<Buffer>((resolve, reject) => {
      const call = client.clientStream((error: grpc.ServiceError | null, answer: Buffer) =>
        error ? reject(error) : resolve(answer),
      );
      for (let index = 0; index < 4; index += 1) call.write(Buffer.alloc(1000));
      call.end();
    });
    expect(reply.toString()).toBe('4000');
    const entry = await captured('/test.Echo/ClientStream');
    expect(entry.payload.grpc).toMatchObject({
      requestMessages: { messages: 4, sizes: [1000, 1000, 1000, 1000] },
      responseMessages: { messages: 1 },
    });
  });

  it('streams both ways at once: each answer arrives before the next message is sent', async () => {
    const call = client.bidi();
    const replies: string[] = [];
    for (const word of ['one', 'two', 'three']) {
      call.write(Buffer.from(word));
      replies.push(
        await new Promise<string>((resolve) =>
          call.once('data', (chunk: Buffer) => resolve(chunk.toString())),
        ),
      );
    }
    call.end();
    await new Promise((resolve) => call.on('end', resolve));
    expect(replies).toEqual(['re:one', 're:two', 're:three']);
    const entry = await captured('/test.Echo/Bidi');
    expect(entry.payload.grpc).toMatchObject({
      status: 0,
      requestMessages: { messages: 3 },
      responseMessages: { messages: 3 },
    });
  });
});

describe('HTTP/2 clients and HTTP/1.1 origins', () => {
  it('still reach an origin that offers only HTTP/1.1', async () => {
    const url = `https://localhost:${origins.httpsPort}/h2-to-h1`;
    const result = await curl([
      '-x',
      `http://127.0.0.1:${proxy.port}`,
      '--http2',
      '--cacert',
      caFile,
      url,
    ]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ url: '/h2-to-h1', httpVersion: '1.1' });
    const entry = await database.entryWhere('path', '/h2-to-h1');
    expect(entry.payload).toMatchObject({ httpVersion: 'HTTP/2.0', statusCode: 200 });
  });
});
