// get_stats and get_status (002 §4.1-4.2): the stats snapshot computed fresh by get_stats() and the
// status row the status service writes, read as the caller: without stats:view / status:view the
// call is a permission error (002 §7), checked by the database itself.
import { z } from 'zod';
import { defineTool } from '../tool-definition.ts';
import { ToolError } from '../tool-error.ts';

const Snapshot = z.record(z.string(), z.unknown());

export const getStats = defineTool({
  name: 'get_stats',
  title: 'Fleet statistics',
  description:
    'The fleet statistics snapshot (devices, online devices, captures by period, top hosts, …), ' +
    'computed fresh on each call (002 §4.1).',
  input: z.object({}),
  output: z.object({ snapshot: Snapshot }),
  annotations: {
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  },
  requires: { section: 'stats', action: 'view' },
  widget: 'status-board',
  async run(call) {
    const snapshot = await call.asCaller(async (client) => {
      const { rows } = await client.query<{ snapshot: Record<string, unknown> }>(
        'select public.get_stats() as snapshot',
      );
      return rows[0]?.snapshot;
    });
    if (!snapshot) throw new ToolError('unavailable', 'The statistics are not available yet.');
    return { snapshot };
  },
});

export const getStatus = defineTool({
  name: 'get_status',
  title: 'Service status',
  description:
    'The service status snapshot: every component with its probe, host metrics, and when it was ' +
    'written (about every 10 s; older than about 30 s means the status service is down, 002 §8).',
  input: z.object({}),
  output: z.object({ snapshot: Snapshot, updated_at: z.string() }),
  annotations: {
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  },
  requires: { section: 'status', action: 'view' },
  widget: 'status-board',
  async run(call) {
    const row = await call.asCaller(async (client) => {
      const { rows } = await client.query<{ snapshot: Record<string, unknown>; updated_at: Date }>(
        'select snapshot, updated_at from public.service_status where id = 1',
      );
      return rows[0];
    });
    if (!row)
      throw new ToolError('unavailable', 'The status service has not written a snapshot yet.');
    return { snapshot: row.snapshot, updated_at: row.updated_at.toISOString() };
  },
});
