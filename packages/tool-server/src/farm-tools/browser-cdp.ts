// browser_cdp (001 §4.1, docs/farm.md "Browser") as MCP declares it: one tool with an `action`,
// as the spec names one tool; without `session_id` an action reuses the caller's latest session
// (opening one when they have none). The farm drives the headless Chromium on this host; its
// traffic is captured under the caller's farm browser device, source `cdp`. `evaluate` is the one
// destructive action (confirm-gated) and needs farm_scripts:edit. A screenshot may also be saved
// to the caller's own folder of the `exports` bucket, as the caller (save_to).
import { BROWSER_ACTIONS, BROWSER_DEFAULT_MAX_CHARS, farmHostOf, shownText } from '@capture/farm';
import { z } from 'zod';
import { defineTool, type ToolCall } from '../mcp/tool-definition.ts';
import { ToolError } from '../mcp/tool-error.ts';
import { RELATIVE_OBJECT_PATH, uploadAsCaller } from './storage-upload.ts';

/** The bucket save_to writes into (supabase/migrations/20261128121000_create_exports_bucket.sql). */
const EXPORTS_BUCKET = 'exports';

const Input = z.object({
  action: z
    .enum(BROWSER_ACTIONS)
    .describe(
      'open: a new session (optionally loading url). navigate: load url. click / type: an ' +
        'element by selector or ref. read_text: the visible text. accessibility_tree: roles, ' +
        'names and refs. screenshot: a PNG. evaluate: run script in the page (needs ' +
        "a person's approval and the farm_scripts capability). close: end the session.",
    ),
  session_id: z
    .string()
    .uuid()
    .optional()
    .describe('The session to act in; omitted: your most recently used one (or a new one).'),
  url: z
    .string()
    .max(8192)
    .refine((value) => /^https?:\/\//i.test(value) || value === 'about:blank', {
      message: 'must be an http(s) URL or about:blank',
    })
    .optional()
    .describe('navigate and open: the page to load (http or https).'),
  selector: z
    .string()
    .min(1)
    .max(1000)
    .optional()
    .describe('click and type: a CSS selector; the first match in the main document.'),
  ref: z
    .string()
    .regex(/^n\d{1,12}$/, 'a ref as accessibility_tree shows it, e.g. n42')
    .optional()
    .describe(
      'click and type: an element by its ref from accessibility_tree (instead of selector).',
    ),
  text: z.string().max(100_000).optional().describe('type: the text to enter.'),
  clear: z
    .boolean()
    .optional()
    .describe('type: replace what the field holds (default) or, false, add to it.'),
  submit: z.boolean().optional().describe('type: press Enter afterwards.'),
  expression: z
    .string()
    .min(1)
    .max(100_000)
    .optional()
    .describe(
      'evaluate: a JavaScript expression; a promise is awaited; the JSON value is returned.',
    ),
  full_page: z.boolean().optional().describe('screenshot: the whole page instead of the viewport.'),
  save_to: z
    .object({
      path: z
        .string()
        .min(1)
        .max(900)
        .regex(RELATIVE_OBJECT_PATH, 'an object path without empty, . or .. segments')
        .describe('The object path inside your own folder, e.g. shots/home.png.'),
    })
    .strict()
    .optional()
    .describe(
      'screenshot: also save the PNG to Storage, bucket exports, at <your user id>/<path> ' +
        '(written as you; replaces an object already there).',
    ),
  wait_until: z
    .enum(['load', 'domcontentloaded', 'networkidle'])
    .optional()
    .describe('navigate and open: when the page counts as loaded (default load).'),
  timeout_seconds: z
    .number()
    .int()
    .min(1)
    .max(120)
    .optional()
    .describe('The longest wait for this action; at most the farm limit.'),
  max_chars: z
    .number()
    .int()
    .min(100)
    .max(200_000)
    .optional()
    .describe(
      `read_text and accessibility_tree: cut the answer here (default ${BROWSER_DEFAULT_MAX_CHARS}).`,
    ),
});

const Output = z.object({
  session_id: z.string(),
  action: z.enum(BROWSER_ACTIONS),
  device_uuid: z.string().describe("The farm device this browser's traffic is captured under."),
  url: z.string().nullable().describe("The page's URL after the action (null once closed)."),
  title: z.string().nullable(),
  status: z
    .number()
    .int()
    .nullable()
    .optional()
    .describe('navigate: the HTTP status of the loaded document.'),
  text: z.string().optional(),
  tree: z.string().optional(),
  truncated: z.boolean().optional().describe('The text, tree or result was cut.'),
  result: z.unknown().optional().describe('evaluate: the JSON value of the expression.'),
  exception: z.string().optional().describe('evaluate: what the expression threw.'),
  screenshot: z
    .object({
      mime_type: z.literal('image/png'),
      width: z.number().int(),
      height: z.number().int(),
      bytes: z.number().int(),
      data: z.string().optional(),
    })
    .optional()
    .describe('screenshot: the image itself is sent as image content.'),
  saved: z
    .object({ bucket: z.string(), path: z.string() })
    .optional()
    .describe('screenshot with save_to: where the PNG was saved in Storage.'),
  save_error: z
    .object({ error: z.string(), message: z.string() })
    .optional()
    .describe('screenshot with save_to: why Storage did not save it (the image is still sent).'),
  closed: z.boolean().optional(),
});

export const browserCdp = defineTool({
  name: 'browser_cdp',
  title: 'Drive a farm browser',
  description:
    'Drives a headless Chromium on a farm host over the DevTools protocol: open a session, ' +
    'navigate, click and type (by CSS selector or by a ref from accessibility_tree), read the ' +
    'text or the accessibility tree, take a screenshot (image content), close. Every request ' +
    'the browser makes goes through the capture proxy and is recorded under your farm browser ' +
    'device (source cdp). Sessions end after a few idle minutes. evaluate runs script in the ' +
    'page: it runs only once a person approves it, and needs the farm_scripts capability.',
  input: Input,
  output: Output,
  annotations: {
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: false,
    openWorldHint: true,
  },
  requires: { section: 'farm', action: 'edit' },
  farm: true,
  confirm(args, call) {
    if (args.action !== 'evaluate') return null;
    const where = args.session_id
      ? `browser session ${args.session_id}`
      : 'your latest browser session';
    return `Run this script in the page of ${where} on farm host ${farmHostOf(call.farm)}: ${shownText(args.expression ?? '')}`;
  },
  splitContent(output) {
    if (!output.screenshot?.data) return { output, images: [] };
    const { data, ...shown } = output.screenshot;
    return { output: { ...output, screenshot: shown }, images: [{ data, mimeType: 'image/png' }] };
  },
  // Before any pending action is asked: a person approving a script the caller may not run
  // would see it refused later.
  refuse(call, args) {
    if (args.save_to !== undefined) {
      if (args.action !== 'screenshot') {
        return new ToolError('invalid_arguments', 'save_to: only the screenshot action saves.');
      }
      if (!call.storage) {
        return new ToolError(
          'unavailable',
          'This server cannot write Storage objects (no anon key configured); take the screenshot without save_to.',
        );
      }
    }
    if (args.action !== 'evaluate' || call.caller.capabilities.has('farm_scripts:edit')) {
      return null;
    }
    return new ToolError(
      'permission_denied',
      'permission denied: evaluate needs the capability farm_scripts:edit, which your role does not hold.',
    );
  },
  // Text typed into a page may be a password: the audit keeps its length and digest only.
  auditDigest: ['text'],
  async run(call, args) {
    if (!call.farm) throw new ToolError('unavailable', 'This server has no farm.');
    const { save_to: saveTo, ...request } = args;
    const answer = await call.farm.browse(call, request, call.approval);
    if (saveTo === undefined || !answer.screenshot?.data) return answer;
    return { ...answer, ...(await saveScreenshot(call, saveTo.path, answer.screenshot.data)) };
  },
});

/**
 * Uploads the PNG as the caller. A refusal is reported beside the image, not instead of it: the
 * screenshot was taken, and the caller may still want it (docs/farm.md "Browser").
 */
async function saveScreenshot(
  call: ToolCall,
  path: string,
  data: string,
): Promise<
  { saved: { bucket: string; path: string } } | { save_error: { error: string; message: string } }
> {
  // refuse() answered already when there is no Storage; this keeps the types honest.
  if (!call.storage)
    throw new ToolError('unavailable', 'This server cannot write Storage objects.');
  try {
    const saved = await uploadAsCaller(
      call.storage,
      { bucket: EXPORTS_BUCKET, userId: call.caller.userId, path, contentType: 'image/png' },
      Buffer.from(data, 'base64'),
    );
    return { saved };
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
    return { save_error: { error: error.code, message: error.message } };
  }
}
