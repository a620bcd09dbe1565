// Held breakpoints and resuming one: an agent debugging live traffic needs to see what is paused
// and let it continue (or abort it). Reading needs entries:view, resuming entries:edit; the
// database stamps who resumed and refuses a second resume (breakpoint_events trigger).
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

export const resumeBreakpoint = defineTool({
  name: 'resume_breakpoint',
  title: 'Resume a held breakpoint',
  description:
    'Lets a held exchange continue unchanged, or aborts it. A breakpoint is resumed once; the ' +
    'database records who resumed it.',
  input: z.object({
    id: z.number().int().positive().describe('The breakpoint event id (from list_breakpoints).'),
    resolution: z.enum(['continue', 'abort']).describe('continue: pass it on; abort: drop it.'),
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
    const row = await call.asCaller(async (client) => {
      const { rows } = await client.query<{ id: number; resolution: string; resumed_at: Date }>(
        `update public.breakpoint_events set resolution = $2
          where id = $1 and resumed_at is null
          returning id::int as id, resolution, resumed_at`,
        [args.id, args.resolution],
      );
      return rows[0];
    });
    if (!row)
      throw new ToolError('not_found', `No held breakpoint ${args.id} that you can resume.`);
    return { ...row, resumed_at: row.resumed_at.toISOString() };
  },
});
