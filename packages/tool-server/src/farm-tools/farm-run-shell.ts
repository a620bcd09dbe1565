// farm_run_shell (001 §4.1, docs/farm.md "Shell"): one command in a fresh sandbox on this farm
// host, as MCP declares it: its arguments, its answer and what a person is asked to approve. Always
// confirm-gated: it runs code on our machines, whatever the command looks like. The farm runs it.
import { farmHostOf, shownText } from '@capture/farm';
import { z } from 'zod';
import { defineTool } from '../mcp/tool-definition.ts';
import { ToolError } from '../mcp/tool-error.ts';

const MAX_COMMAND_BYTES = 16 * 1024;

const Input = z.object({
  command: z
    .string()
    .min(1)
    .refine((value) => Buffer.byteLength(value) <= MAX_COMMAND_BYTES, {
      message: `at most ${MAX_COMMAND_BYTES} bytes`,
    })
    .refine((value) => !value.includes('\0'), { message: 'must not contain NUL' })
    .describe('A POSIX sh command line, run in /scratch (the only writable directory).'),
  network: z
    .enum(['none', 'proxy'])
    .default('none')
    .describe(
      'none: no network. proxy: HTTP(S) only through the capture proxy (http_proxy is set and ' +
        'the project CA trusted); every request is captured under your farm device (source farm).',
    ),
  timeout_seconds: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe('Wall-time limit; at most the farm limit (default: the limit).'),
});

export const farmRunShell = defineTool({
  name: 'farm_run_shell',
  title: 'Run a shell command on the farm',
  description:
    'Runs one command in a throwaway sandbox on a farm host: read-only system, private ' +
    'writable /scratch, no access to the platform, network none or only through the capture ' +
    'proxy; limits on wall time, CPU, memory, processes and output. Answers exit code, stdout, ' +
    'stderr (truncation flagged) and duration. Every call runs only once a person approves ' +
    'it (in the dashboard, or in your client when it asks them); you cannot approve it.',
  input: Input,
  output: z.object({
    exit_code: z.number().int().nullable(),
    signal: z.string().nullable(),
    stdout: z.string(),
    stderr: z.string(),
    stdout_truncated: z.boolean(),
    stderr_truncated: z.boolean(),
    terminated: z
      .enum(['wall_time', 'output_limit', 'cpu_time', 'memory'])
      .nullable()
      .describe('Why the sandbox was stopped early, if it was.'),
    duration_ms: z.number().int(),
    network: z.enum(['none', 'proxy']),
    device_uuid: z.string().nullable().describe('The farm device its traffic is captured under.'),
  }),
  annotations: {
    readOnlyHint: false,
    destructiveHint: true,
    idempotentHint: false,
    openWorldHint: true,
  },
  requires: { section: 'farm', action: 'edit' },
  farm: true,
  confirm(args, call) {
    const network =
      args.network === 'proxy' ? 'network only through the capture proxy' : 'no network';
    const seconds = args.timeout_seconds ? `, at most ${args.timeout_seconds} s` : '';
    return `Run \`${shownText(args.command)}\` in a sandbox on farm host ${farmHostOf(call.farm)} (${network}${seconds}).`;
  },
  async run(call, args) {
    const farm = call.farm;
    if (!farm) throw new ToolError('unavailable', 'This server has no farm.');
    const result = await farm.runShell(
      call,
      { command: args.command, network: args.network, timeoutSeconds: args.timeout_seconds },
      call.approval,
    );
    return {
      exit_code: result.exitCode,
      signal: result.signal,
      stdout: result.stdout,
      stderr: result.stderr,
      stdout_truncated: result.stdoutTruncated,
      stderr_truncated: result.stderrTruncated,
      terminated: result.terminated,
      duration_ms: result.durationMs,
      network: result.network,
      device_uuid: result.deviceUuid,
    };
  },
});
