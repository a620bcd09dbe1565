// summarize_device_traffic (001 §4.1): one device over a time window, computed in SQL on native
// columns with a ts floor (001 §4.2) by public.summarize_device_traffic(), as the caller.
import { z } from 'zod';
import { defineTool } from '../tool-definition.ts';

export const summarizeDeviceTraffic = defineTool({
  name: 'summarize_device_traffic',
  title: 'Summarize device traffic',
  description:
    "One device's captured traffic over a time window (default: the last 24 hours, at most 31 " +
    'days): requests, error rate, status-class and method mix, top hosts and endpoints, slowest ' +
    'requests, bytes, first and last seen.',
  input: z.object({
    device_uuid: z.uuid().describe('The device (from list_devices).'),
    since: z.iso.datetime({ offset: true }).optional().describe('Window start (ISO 8601).'),
    until: z.iso
      .datetime({ offset: true })
      .optional()
      .describe('Window end (ISO 8601); default now.'),
  }),
  output: z.object({ summary: z.record(z.string(), z.unknown()) }),
  annotations: {
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  },
  requires: { section: 'entries', action: 'view' },
  widget: 'traffic-summary',
  async run(call, args) {
    const summary = await call.asCaller(async (client) => {
      const { rows } = await client.query<{ summary: Record<string, unknown> }>(
        'select public.summarize_device_traffic($1, $2, $3) as summary',
        [args.device_uuid, args.since ?? null, args.until ?? null],
      );
      return rows[0]?.summary ?? {};
    });
    // Slow requests' URLs and endpoint paths may carry tokens: the summary leaves redacted.
    return { summary: (await call.redact(summary)) as Record<string, unknown> };
  },
});
