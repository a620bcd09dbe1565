// gRPC unary calls in a closed loop for the proxy benchmark: C calls in flight on one
// channel (HTTP/2 multiplexes them) for D seconds, direct or through a proxy (grpc-js's own
// CONNECT support, the proxy's CA trusted).
import * as grpc from '@grpc/grpc-js';
import { percentile } from '../percentile.ts';
import type { LoadResult } from './load.ts';

const identity = (value: Buffer) => value;
const SERVICE = {
  unary: {
    path: '/bench.Echo/Unary',
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
} satisfies grpc.ServiceDefinition;

export async function grpcClosedLoop(options: {
  target: string;
  ca: string;
  proxyUrl: string | null;
  concurrency: number;
  seconds: number;
}): Promise<LoadResult> {
  const Client = grpc.makeGenericClientConstructor(SERVICE, 'Echo');
  const channelOptions = options.proxyUrl
    ? { 'grpc.http_connect_target': `dns:///${options.target}` }
    : {};
  // With grpc.http_connect_target set, the channel's own target is the proxy.
  const client = new Client(
    options.proxyUrl ? new URL(options.proxyUrl).host : options.target,
    grpc.credentials.createSsl(Buffer.from(options.ca)),
    {
      ...channelOptions,
      'grpc.enable_http_proxy': 0,
      'grpc.ssl_target_name_override': 'localhost',
    },
  ) as unknown as grpc.Client & {
    unary(body: Buffer, done: (error: grpc.ServiceError | null, reply: Buffer) => void): void;
  };
  const request = Buffer.alloc(64, 0x71);
  const call = () =>
    new Promise<number>((resolve, reject) => {
      const started = performance.now();
      client.unary(request, (error) =>
        error ? reject(error) : resolve(performance.now() - started),
      );
    });
  await Promise.all(Array.from({ length: options.concurrency }, call));
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + options.seconds * 1000;
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (performance.now() < deadline) {
        try {
          latencies.push(await call());
        } catch {
          errors += 1;
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  client.close();
  const sorted = latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    errors,
    seconds: elapsed,
    perSecond: latencies.length / elapsed,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
  };
}
