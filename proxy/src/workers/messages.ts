// What a daemon's primary process and its workers tell each other over the cluster's IPC channel
// (docs/proxy.md "Worker processes"). Both ends are this code, so a message is checked for its
// kind only; anything else on the channel (Node's own cluster messages) is ignored.
import type { CaptureWriterStats } from '../capture/capture-writer.ts';
import type { LearnedDevice } from '../devices/device-registry.ts';
import type { DeviceSetupStatus } from '../setup/device-activity.ts';
import type { LearnedPassthrough } from '../tls/passthrough-policy.ts';

/** How the primary tells a worker which one it is, in the worker's environment. */
export const WORKER_INDEX_VARIABLE = 'PROXY_WORKER_INDEX';
export const WORKER_COUNT_VARIABLE = 'PROXY_WORKER_COUNT';

/** A worker's capture counts as it last reported them. */
export type WorkerCaptureStats = CaptureWriterStats & { index: number; pid: number; at: string };

/**
 * A binding one worker made, for the others to learn before its /allocate answers: each sibling
 * says `device-applied`, then the primary tells the maker `device-shared` (same `id`).
 */
export type DeviceMessage = { kind: 'device'; id: number; learned: LearnedDevice };
/** A set-up page's device activity, for the others' pages. */
export type ActivityMessage = { kind: 'activity'; device: string; status: DeviceSetupStatus };
/** A client that refused our certificate for a host: every worker passes its next tunnels. */
export type PassthroughMessage = { kind: 'passthrough'; learned: LearnedPassthrough };

/** Sent by a worker: relayed to its siblings (activity, passthrough, device) or gathered by the primary. */
export type FromWorker =
  | { kind: 'ready'; port: number; managementPort: number | undefined }
  /** It could not start: the primary says why, once, as the daemon's own fault at start. */
  | { kind: 'failed'; message: string }
  | ActivityMessage
  | PassthroughMessage
  | DeviceMessage
  | { kind: 'device-applied'; id: number }
  | { kind: 'captures'; stats: WorkerCaptureStats };

/** Sent by the primary to every worker. */
export type FromPrimary =
  | ActivityMessage
  | PassthroughMessage
  | DeviceMessage
  | { kind: 'device-shared'; id: number }
  | { kind: 'captures'; workers: WorkerCaptureStats[] }
  | { kind: 'stop' };

const KINDS = new Set([
  'ready',
  'failed',
  'activity',
  'passthrough',
  'device',
  'device-applied',
  'device-shared',
  'captures',
  'stop',
]);

export function isProxyMessage<T extends { kind: string }>(message: unknown): message is T {
  return (
    typeof message === 'object' &&
    message !== null &&
    KINDS.has((message as { kind?: unknown }).kind as string)
  );
}
