// Held breakpoints and resuming one: an agent debugging live traffic needs to see what is paused
// and let it continue, modify or abort it. Reading needs entries:view, resuming entries:edit; the
// database stamps who resumed, refuses a second resume and a modified message naming fields of
// the other phase (breakpoint_events trigger).
import { z } from 'zod';
import { defineTool } from '../tool-definition.ts';
import { ToolError } from '../tool-error.ts';

const HeldBreakpoint = z.object({
  id: z.number().int(),
  device_uuid: z.string(),
  device_name: z.string(),
  phase: z.string(),
  pattern: z.string(),
  method: z.string().nullable(),
  url: z.string().nullable(),
  held_at: z.string(),
});

export const listBreakpoints = defineTool({
  name: 'list_breakpoints',
  title: 'Held breakpoints',
  description:
    'Exchanges paused by a breakpoint pattern and still held, oldest first, on the devices you ' +
    'can see.',
  input: z.object({
    device_uuid: z.uuid().optional().describe('Only this device.'),
  }),
  output: z.object({ breakpoints: z.array(HeldBreakpoint) }),
  annotations: {
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  },
  requires: { section: 'entries', action: 'view' },
  async run(call, args) {
    const rows = await call.asCaller(async (client) => {
      const { rows } = await client.query<z.infer<typeof HeldBreakpoint> & { held_at: Date }>(
        `select b.id::int as id, b.device_uuid, d.name as device_name, b.phase, b.pattern, b.method,
                b.url, b.held_at
           from public.breakpoint_events b join public.devices d on d.uuid = b.device_uuid
          where b.resumed_at is null and ($1::uuid is null or b.device_uuid = $1::uuid)
          order by b.held_at
          limit 200`,
        [args.device_uuid ?? null],
      );
      return rows;
    });
    const breakpoints = rows.map((row) => ({ ...row, held_at: row.held_at.toISOString() }));
    // A held request's URL (and the pattern that caught it) may carry a token.
    return { breakpoints: (await call.redact(breakpoints)) as typeof breakpoints };
  },
});

// A modified message in the shapes the proxy applies (docs/proxy.md "Breakpoints"; the proxy's
// modified-message.ts): checked here so a malformed edit is the caller's error now, not a 502 the
// held client gets later. Which keys a phase takes is the database's check (22023, below).
const HeaderValue = z.string().regex(/^[^\r\n\0]*$/, 'a single-line header value');
const HeaderName = z
  .string()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'a header name (RFC 9110 token)');
const ModifiedHeaders = z
  .union([
    z.array(z.tuple([HeaderName, HeaderValue])),
    z.record(HeaderName, z.union([HeaderValue, z.array(HeaderValue)])),
  ])
  .describe('Replaces every header: [[name, value], …] or {name: value | [values]}.');
const ModifiedBody = z
  .union([
    z.string(),
    z.strictObject({ text: z.string() }),
    z.strictObject({ base64: z.base64() }),
    z.null(),
  ])
  .describe('A string (UTF-8), {"text": …}, {"base64": …}, or null for an empty body.');
const ModifiedMessage = z
  .strictObject({
    method: z
      .string()
      .regex(/^[A-Za-z]{1,20}$/, 'an HTTP method')
      .optional()
      .describe('Request phase only.'),
    url: z
      .string()
      .min(1)
      .optional()
      .describe('Request phase only; may be relative, and stays on the held origin.'),
    status: z.number().int().min(200).max(599).optional().describe('Response phase only.'),
    headers: ModifiedHeaders.optional(),
    body: ModifiedBody.optional(),
  })
  .refine((message) => Object.keys(message).length > 0, 'names at least one field')
  .refine(
    (message) => message.status === undefined || (!message.method && message.url === undefined),
    'a request edit takes method, url, headers, body; a response edit status, headers, body',
  );

export const resumeBreakpoint = defineTool({
  name: 'resume_breakpoint',
  title: 'Resume a held breakpoint',
  description:
    'Lets a held exchange continue unchanged, continue as modified_message, or aborts it. A ' +
    'breakpoint is resumed once; the database records who resumed it.',
  input: z
    .object({
      id: z.number().int().positive().describe('The breakpoint event id (from list_breakpoints).'),
      resolution: z
        .enum(['continue', 'modify', 'abort'])
        .describe(
          'continue: pass it on; modify: pass on modified_message instead; abort: drop it.',
        ),
      modified_message: ModifiedMessage.optional().describe(
        'With modify only. A request breakpoint: method, url, headers, body; a response ' +
          'breakpoint: status, headers, body. Absent fields stay as held.',
      ),
    })
    .refine((args) => (args.resolution === 'modify') === (args.modified_message !== undefined), {
      message: 'modified_message is given with resolution modify, and only then',
      path: ['modified_message'],
    }),
  output: z.object({ id: z.number().int(), resolution: z.string(), resumed_at: z.string() }),
  annotations: {
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: false,
    openWorldHint: false,
  },
  requires: { section: 'entries', action: 'edit' },
  async run(call, args) {
    const row = await call
      .asCaller(async (client) => {
        const { rows } = await client.query<{ id: number; resolution: string; resumed_at: Date }>(
          `update public.breakpoint_events set resolution = $2, modified_message = $3::jsonb
            where id = $1 and resumed_at is null
            returning id::int as id, resolution, resumed_at`,
          [
            args.id,
            args.resolution,
            args.modified_message ? JSON.stringify(args.modified_message) : null,
          ],
        );
        return rows[0];
      })
      .catch((error: unknown) => {
        // The guard trigger's 22023: the message names fields of the other phase (its text says
        // which the phase takes).
        if ((error as { code?: unknown }).code === '22023') {
          throw new ToolError(
            'invalid_arguments',
            `modified_message does not fit breakpoint ${args.id}: ${(error as Error).message}.`,
            { cause: error },
          );
        }
        throw error;
      });
    if (!row)
      throw new ToolError('not_found', `No held breakpoint ${args.id} that you can resume.`);
    return { ...row, resumed_at: row.resumed_at.toISOString() };
  },
});
