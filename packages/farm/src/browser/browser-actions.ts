// browser_cdp's work on this host (docs/farm.md "Browser"): one action in one of the caller's
// browser sessions (the one named, their latest, or a new one), within the host's action time
// limit. `evaluate` runs script in the page, so it runs only once a person approved it. Page and
// browser failures come back as FarmErrors a model can act on.
import type { ActingCaller } from '../acting-caller.ts';
import { type Approval, requireApproval } from '../approval-gate.ts';
import type { FarmConfig } from '../farm-config.ts';
import { FarmError } from '../farm-error.ts';
import { type ElementTarget, PageActionError, type WaitUntil } from './browser-page.ts';
import type { BrowserSession, BrowserSessions } from './browser-sessions.ts';
import { CdpError } from './cdp-pipe.ts';
import { BrowserStartError } from './chromium-sandbox.ts';

export const BROWSER_ACTIONS = [
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

export type BrowserAction = (typeof BROWSER_ACTIONS)[number];

/** An evaluate result longer than this (as JSON) comes back cut, as a string. */
const MAX_RESULT_CHARS = 100_000;
/** read_text's and accessibility_tree's cut when the request names none. */
export const BROWSER_DEFAULT_MAX_CHARS = 20_000;

/** browser_cdp's arguments as the tool server validated them (their wire names). */
export interface BrowserRequest {
  action: BrowserAction;
  session_id?: string;
  url?: string;
  selector?: string;
  ref?: string;
  text?: string;
  clear?: boolean;
  submit?: boolean;
  expression?: string;
  full_page?: boolean;
  wait_until?: WaitUntil;
  timeout_seconds?: number;
  max_chars?: number;
}

/** What an action answers (browser_cdp's output). */
export interface BrowserAnswer {
  session_id: string;
  action: BrowserAction;
  /** The farm device this browser's traffic is captured under. */
  device_uuid: string;
  url: string | null;
  title: string | null;
  status?: number | null;
  text?: string;
  tree?: string;
  truncated?: boolean;
  result?: unknown;
  exception?: string;
  screenshot?: {
    mime_type: 'image/png';
    width: number;
    height: number;
    bytes: number;
    /** The PNG, base64; the tool server sends it as image content. */
    data?: string;
  };
  closed?: boolean;
}

/** What an action adds to the session, URL and title every answer has. */
type ActionAnswer = Partial<BrowserAnswer>;

function targetOf(request: BrowserRequest): ElementTarget {
  if (request.selector !== undefined && request.ref !== undefined) {
    throw new FarmError('invalid_arguments', 'selector, ref: give one of them, not both');
  }
  if (request.ref !== undefined) return { ref: request.ref };
  if (request.selector !== undefined) return { selector: request.selector };
  throw new FarmError('invalid_arguments', `selector: ${request.action} needs a selector or a ref`);
}

function required<T>(value: T | undefined, field: string, action: string): T {
  if (value === undefined) {
    throw new FarmError('invalid_arguments', `${field}: ${action} needs it`);
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
  request: BrowserRequest,
  timeoutMs: number,
): Promise<ActionAnswer> {
  const maxChars = request.max_chars ?? BROWSER_DEFAULT_MAX_CHARS;
  const waitUntil: WaitUntil = request.wait_until ?? 'load';
  return session.run(async (page): Promise<ActionAnswer> => {
    switch (request.action) {
      case 'open':
        if (request.url) return { status: await page.navigate(request.url, waitUntil, timeoutMs) };
        return {};
      case 'navigate':
        return {
          status: await page.navigate(
            required(request.url, 'url', 'navigate'),
            waitUntil,
            timeoutMs,
          ),
        };
      case 'click':
        await page.click(targetOf(request), timeoutMs);
        return {};
      case 'type':
        await page.type(
          targetOf(request),
          required(request.text, 'text', 'type'),
          { clear: request.clear ?? true, submit: request.submit ?? false },
          timeoutMs,
        );
        return {};
      case 'read_text':
        return page.readText(maxChars);
      case 'accessibility_tree':
        return page.accessibilityTree(maxChars);
      case 'screenshot': {
        const shot = await page.screenshot(request.full_page ?? false);
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
          required(request.expression, 'expression', 'evaluate'),
          timeoutMs,
        );
        return 'exception' in outcome ? outcome : boundedResult(outcome.value);
      }
      case 'close':
        return {};
    }
  });
}

/** Page and browser failures as the farm errors a model can act on. */
function farmErrorOf(error: unknown): unknown {
  if (error instanceof PageActionError) {
    const code =
      error.code === 'element_not_found'
        ? 'not_found'
        : error.code === 'invalid_target'
          ? 'invalid_arguments'
          : 'failed';
    return new FarmError(code, error.message, { cause: error });
  }
  if (error instanceof BrowserStartError) {
    return new FarmError('unavailable', `The farm could not start a browser: ${error.message}`, {
      cause: error,
    });
  }
  if (error instanceof CdpError) {
    return new FarmError('failed', `The browser failed: ${error.message}`, { cause: error });
  }
  return error;
}

export async function browse(
  parts: { config: FarmConfig; sessions: BrowserSessions },
  call: ActingCaller,
  request: BrowserRequest,
  approval: Approval | undefined,
): Promise<BrowserAnswer> {
  // Script in the page: a person approves it first (the other actions are the page's own).
  if (request.action === 'evaluate') requireApproval(approval, 'A script in a farm browser');
  const { sessions } = parts;
  const limitMs = parts.config.browser.actionTimeoutMs;
  const timeoutMs = Math.min(limitMs, (request.timeout_seconds ?? limitMs / 1000) * 1000);
  try {
    if (request.action === 'close') {
      const id = required(request.session_id, 'session_id', 'close');
      const closed = await sessions.closeFor(call, id);
      return {
        session_id: id,
        action: 'close',
        device_uuid: closed.deviceUuid,
        url: null,
        title: null,
        closed: true,
      };
    }
    const session =
      request.action === 'open'
        ? await sessions.open(call)
        : await sessions.reach(call, request.session_id);
    const result = await perform(session, request, timeoutMs);
    sessions.touch(session);
    const where = await session.run((page) => page.location());
    return {
      session_id: session.id,
      action: request.action,
      device_uuid: session.deviceUuid,
      url: where.url,
      title: where.title,
      ...result,
    };
  } catch (error) {
    throw farmErrorOf(error);
  }
}
