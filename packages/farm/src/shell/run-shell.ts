// farm_run_shell's work on this host (docs/farm.md "Shell"): one command, once a person approved
// it, in a fresh sandbox within the host's wall-time limit; with network "proxy" only through the
// caller's farm device on the capture proxy, so everything it fetches is captured.
import type { ActingCaller } from '../acting-caller.ts';
import { type Approval, requireApproval } from '../approval-gate.ts';
import type { FarmConfig } from '../farm-config.ts';
import type { FarmDevices } from '../farm-egress.ts';
import { FarmError } from '../farm-error.ts';
import {
  SandboxStartError,
  ShellBusyError,
  type ShellResult,
  type ShellSandbox,
} from './shell-sandbox.ts';

export interface ShellCommand {
  command: string;
  /** `none`: no network at all; `proxy`: only through the capture proxy. */
  network: 'none' | 'proxy';
  /** Lowers the host's wall-time limit for this run; never raises it. */
  timeoutSeconds?: number;
}

export interface ShellRun extends ShellResult {
  network: 'none' | 'proxy';
  /** The farm device its traffic is captured under (network "proxy"). */
  deviceUuid: string | null;
}

export interface ShellParts {
  config: FarmConfig;
  devices: FarmDevices;
  shell: ShellSandbox;
}

export async function runShellCommand(
  parts: ShellParts,
  call: ActingCaller,
  request: ShellCommand,
  approval: Approval | undefined,
): Promise<ShellRun> {
  // It runs code on our machines, whatever the command looks like.
  requireApproval(approval, 'A shell command');
  const limitMs = parts.config.shell.wallTimeMs;
  const wallTimeMs = Math.min(limitMs, (request.timeoutSeconds ?? limitMs / 1000) * 1000);
  const egress =
    request.network === 'proxy' ? await parts.devices.egressFor(call, 'farm') : undefined;
  try {
    const result = await parts.shell.run({
      command: request.command,
      network: request.network,
      egress,
      wallTimeMs,
    });
    return { ...result, network: request.network, deviceUuid: egress?.deviceUuid ?? null };
  } catch (error) {
    if (error instanceof ShellBusyError) {
      throw new FarmError('unavailable', error.message, { cause: error });
    }
    if (error instanceof SandboxStartError) {
      throw new FarmError('unavailable', `The farm could not start a sandbox: ${error.message}`, {
        cause: error,
      });
    }
    throw error;
  }
}
