// browser_cdp (001 §4.1, docs/farm.md "Browser"): drives a headless Chromium on this farm host
// over the DevTools protocol for the caller. One tool with an `action`, as the spec names one
// tool; without `session_id` an action reuses the caller's latest session (opening one when they
// have none). Its traffic is captured under the caller's farm browser device, source `cdp`.
// `evaluate` is the one destructive action (confirm-gated) and needs farm_scripts:edit.
import { z } from 'zod';
import { defineTool, type ToolCall } from '../../mcp/tool-definition.ts';
import { ToolError } from '../../mcp/tool-error.ts';
import { type ElementTarget, PageActionError, type WaitUntil } from '../browser/browser-page.ts';
import type { BrowserSession, BrowserSessions } from '../browser/browser-sessions.ts';
import { CdpError } from '../browser/cdp-pipe.ts';
import { BrowserStartError } from '../browser/chromium-sandbox.ts';
import { farmHostOf, shownText } from '../confirmations.ts';

const ACTIONS = [
  'open',
  'navigate',
  'click',
  'type',
  'read_text',
  'accessibility_tree',
  'screenshot',
  'evaluate',
  'close',
] as const;

/** An evaluate result longer than this (as JSON) comes back cut, as a string. */
const MAX_RESULT_CHARS = 100_000;
const DEFAULT_MAX_CHARS = 20_000;

const Input = z.object({
  action: z
    .enum(ACTIONS)
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
      `read_text and accessibility_tree: cut the answer here (default ${DEFAULT_MAX_CHARS}).`,
    ),
});

type Args = z.output<typeof Input>;

const Output = z.object({
  session_id: z.string(),
  action: z.enum(ACTIONS),
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
  closed: z.boolean().optional(),
});

type Output = z.output<typeof Output>;

function sessionsOf(call: ToolCall): BrowserSessions {
  const browsers = call.farm?.browsers;
  if (!browsers) throw new ToolError('unavailable', 'This server has no farm.');
  return browsers;
}

function targetOf(args: Args): ElementTarget {
  if (args.selector !== undefined && args.ref !== undefined) {
    throw new ToolError('invalid_arguments', 'selector, ref: give one of them, not both');
  }
  if (args.ref !== undefined) return { ref: args.ref };
  if (args.selector !== undefined) return { selector: args.selector };
  throw new ToolError('invalid_arguments', `selector: ${args.action} needs a selector or a ref`);
}

function required<T>(value: T | undefined, field: string, action: string): T {
  if (value === undefined) {
    throw new ToolError('invalid_arguments', `${field}: ${action} needs it`);
  }
  return value;
}

/** The JSON value of an evaluate, cut to a string when it is too large. */
function boundedResult(value: unknown): { result: unknown; truncated: boolean } {
  const json = JSON.stringify(value) ?? 'null';
  if (json.length <= MAX_RESULT_CHARS) return { result: value ?? null, truncated: false };
  return { result: json.slice(0, MAX_RESULT_CHARS), truncated: true };
}

async function perform(
  session: BrowserSession,
  args: Args,
  timeoutMs: number,
): Promise<Partial<Output>> {
  const maxChars = args.max_chars ?? DEFAULT_MAX_CHARS;
  const waitUntil: WaitUntil = args.wait_until ?? 'load';
  return session.run(async (page) => {
    switch (args.action) {
      case 'open':
        if (args.url) return { status: await page.navigate(args.url, waitUntil, timeoutMs) };
        return {};
      case 'navigate':
        return {
          status: await page.navigate(required(args.url, 'url', 'navigate'), waitUntil, timeoutMs),
        };
      case 'click':
        await page.click(targetOf(args), timeoutMs);
        return {};
      case 'type':
        await page.type(
          targetOf(args),
          required(args.text, 'text', 'type'),
          { clear: args.clear ?? true, submit: args.submit ?? false },
          timeoutMs,
        );
        return {};
      case 'read_text':
        return page.readText(maxChars);
      case 'accessibility_tree':
        return page.accessibilityTree(maxChars);
      case 'screenshot': {
        const shot = await page.screenshot(args.full_page ?? false);
        return {
          screenshot: {
            mime_type: 'image/png',
            width: shot.width,
            height: shot.height,
            bytes: Buffer.byteLength(shot.data, 'base64'),
            data: shot.data,
          },
        };
      }
      case 'evaluate': {
        const outcome = await page.evaluate(
          required(args.expression, 'expression', 'evaluate'),
          timeoutMs,
        );
        return 'exception' in outcome ? outcome : boundedResult(outcome.value);
      }
      case 'close':
        return {};
    }
  });
}

/** Page and browser failures as the tool errors the model can act on. */
function toolErrorOf(error: unknown): unknown {
  if (error instanceof PageActionError) {
    const code =
      error.code === 'element_not_found'
        ? 'not_found'
        : error.code === 'invalid_target'
          ? 'invalid_arguments'
          : 'failed';
    return new ToolError(code, error.message, { cause: error });
  }
  if (error instanceof BrowserStartError) {
    return new ToolError('unavailable', `The farm could not start a browser: ${error.message}`, {
      cause: error,
    });
  }
  if (error instanceof CdpError) {
    return new ToolError('failed', `The browser failed: ${error.message}`, { cause: error });
  }
  return error;
}

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
    return `Run this script in the page of ${where} on farm host ${farmHostOf(call.farm?.config)}: ${shownText(args.expression ?? '')}`;
  },
  splitContent(output) {
    if (!output.screenshot?.data) return { output, images: [] };
    const { data, ...shown } = output.screenshot;
    return { output: { ...output, screenshot: shown }, images: [{ data, mimeType: 'image/png' }] };
  },
  // Before any pending action is asked: a person approving a script the caller may not run
  // would see it refused later.
  refuse(call, args) {
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
    const sessions = sessionsOf(call);
    const limitMs = call.farm?.config.browser.actionTimeoutMs ?? 30_000;
    const timeoutMs = Math.min(limitMs, (args.timeout_seconds ?? limitMs / 1000) * 1000);
    try {
      if (args.action === 'close') {
        const id = required(args.session_id, 'session_id', 'close');
        const closed = await sessions.closeFor(call, id);
        return {
          session_id: id,
          action: 'close' as const,
          device_uuid: closed.deviceUuid,
          url: null,
          title: null,
          closed: true,
        };
      }
      const session =
        args.action === 'open'
          ? await sessions.open(call)
          : await sessions.reach(call, args.session_id);
      const result = await perform(session, args, timeoutMs);
      sessions.touch(session);
      const where = await session.run((page) => page.location());
      return {
        session_id: session.id,
        action: args.action,
        device_uuid: session.deviceUuid,
        url: where.url,
        title: where.title,
        ...result,
      };
    } catch (error) {
      throw toolErrorOf(error);
    }
  },
});
