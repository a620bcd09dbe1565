// inspect_requests (001 §4.1): captured requests filtered by device, host, url/path search,
// method, status class and time window, newest first with keyset pagination; or one request in
// full by id. Lists come from public.inspect_entries() (native columns, trigram search); a full
// request's payload passes through the shared redaction, so secrets come back as placeholders.
import { z } from 'zod';
import { defineTool } from '../tool-definition.ts';
import { ToolError } from '../tool-error.ts';

const RequestSummary = z.object({
  id: z.number().int(),
  ts: z.string(),
  kind: z.string(),
  device_uuid: z.string().nullable(),
  method: z.string().nullable(),
  host: z.string().nullable(),
  url: z.string().nullable(),
  status_code: z.number().int().nullable(),
  duration_ms: z.number().nullable(),
  request_bytes: z.number().nullable(),
  response_bytes: z.number().nullable(),
});

interface SummaryRow extends Omit<z.infer<typeof RequestSummary>, 'ts' | 'id'> {
  id: string | number;
  ts: Date;
}

const STATUS_CLASSES = { '1xx': 1, '2xx': 2, '3xx': 3, '4xx': 4, '5xx': 5, none: 0 } as const;

export const inspectRequests = defineTool({
  name: 'inspect_requests',
  title: 'Inspect captured requests',
  description:
    'Captured requests, newest first: filter by device, host, a search in host/path/url, HTTP ' +
    'method, status class and time window; page with before_id. Pass id to get one request in ' +
    'full (headers, bodies, timings). Secrets (authorization, cookies, API keys, tokens, ' +
    'passwords, private keys) come back as stable placeholders such as [redacted:jwt:1a2b3c4d].',
  input: z.object({
    id: z.number().int().positive().optional().describe('One request in full.'),
    device_uuid: z.uuid().optional(),
    host: z.string().min(1).max(253).optional().describe('Exact host.'),
    search: z.string().min(1).max(200).optional().describe('Substring of host, path or url.'),
    method: z
      .string()
      .regex(/^[A-Za-z]{1,16}$/)
      .optional(),
    status_class: z.enum(['1xx', '2xx', '3xx', '4xx', '5xx', 'none']).optional(),
    since: z.iso.datetime({ offset: true }).optional(),
    until: z.iso.datetime({ offset: true }).optional(),
    before_id: z.number().int().positive().optional().describe('next_before_id of the last page.'),
    limit: z.number().int().min(1).max(200).optional().describe('Default 50.'),
  }),
  output: z.object({
    requests: z.array(RequestSummary).optional(),
    next_before_id: z.number().int().nullable().optional(),
    request: z.record(z.string(), z.unknown()).optional(),
  }),
  annotations: {
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  },
  requires: { section: 'entries', action: 'view' },
  widget: 'request-detail',
  // A substring search of host, path and url is the trigram path: several times the cost of a
  // page by device, host or time (docs/tool-server.md, "Benchmark").
  lane: (args) => (args.id === undefined && args.search !== undefined ? 'search' : 'standard'),
  async run(call, args) {
    if (args.id !== undefined) {
      const row = await call.asCaller(async (client) => {
        const { rows } = await client.query<{
          id: string;
          ts: Date;
          kind: string;
          device_uuid: string | null;
          payload: unknown;
        }>('select id, ts, kind, device_uuid, payload from public.entries where id = $1 limit 1', [
          args.id,
        ]);
        return rows[0];
      });
      if (!row)
        throw new ToolError('not_found', `No captured request ${args.id} that you can see.`);
      return {
        request: {
          id: Number(row.id),
          ts: row.ts.toISOString(),
          kind: row.kind,
          device_uuid: row.device_uuid,
          payload: await call.redact(row.payload),
        },
      };
    }
    const limit = args.limit ?? 50;
    const rows = await call.asCaller(async (client) => {
      const { rows } = await client.query<SummaryRow>(
        `select id, ts, kind, device_uuid, method, host, url, status_code, duration_ms,
                request_bytes, response_bytes
           from public.inspect_entries(
             device_uuids => $1, hosts => $2, search_q => $3, methods => $4,
             status_classes => $5, from_ts => $6, to_ts => $7, before_id => $8, lim => $9)`,
        [
          args.device_uuid ? [args.device_uuid] : null,
          args.host ? [args.host] : null,
          args.search ?? null,
          args.method ? [args.method.toUpperCase()] : null,
          args.status_class ? [STATUS_CLASSES[args.status_class]] : null,
          args.since ?? null,
          args.until ?? null,
          args.before_id ?? null,
          limit,
        ],
      );
      return rows;
    });
    // A URL may carry a token in its query string: one redaction pass for the whole page.
    const urls = (await call.redact(rows.map((row) => row.url))) as Array<string | null>;
    const requests = rows.map((row, index) => ({
      ...row,
      id: Number(row.id),
      ts: row.ts.toISOString(),
      url: urls[index] ?? null,
    }));
    const last = requests.at(-1);
    return { requests, next_before_id: requests.length === limit && last ? last.id : null };
  },
});
