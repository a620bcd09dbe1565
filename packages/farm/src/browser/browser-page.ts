// What browser_cdp does to a page, in DevTools protocol terms (docs/farm.md "Browser"): navigate
// and wait for a lifecycle point, click and type as a person would (trusted input events at the
// element's position, found by CSS selector or by a ref from the accessibility tree), read the
// text or the accessibility tree, take a screenshot, evaluate script. Reads run in an isolated
// world, so a page cannot fake what we read by patching its own globals. Popups are closed,
// dialogs dismissed and downloads refused: the session is one tab.
import type { CdpPipe } from './cdp-pipe.ts';
import { CdpError } from './cdp-pipe.ts';
import { VIEWPORT } from './chromium-sandbox.ts';

export type PageErrorCode =
  | 'element_not_found'
  | 'invalid_target'
  | 'navigation_failed'
  | 'timeout';

export class PageActionError extends Error {
  readonly code: PageErrorCode;

  constructor(code: PageErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = 'PageActionError';
    this.code = code;
  }
}

export type WaitUntil = 'load' | 'domcontentloaded' | 'networkidle';

/** Chromium's lifecycle event names for each wait point. */
const LIFECYCLE: Record<WaitUntil, string> = {
  load: 'load',
  domcontentloaded: 'DOMContentLoaded',
  networkidle: 'networkIdle',
};

/** An element: a CSS selector in the main document, or a ref from accessibility_tree. */
export type ElementTarget = { selector: string } | { ref: string };

/** How long after a click or an Enter a navigation it starts is noticed. */
const SETTLE_MS = 200;
/** A full-page screenshot stops at this height and at this width (CSS pixels). */
const MAX_SCREENSHOT_HEIGHT = 16_384;
const MAX_SCREENSHOT_WIDTH = 16_384;
/**
 * And at this many pixels: a viewport-wide page at the full height. The page sets its own size,
 * and Chromium renders the whole clip in memory first (a 20,000 × 16,000 page took 1.7 GB and
 * 40 s), with no RLIMIT_AS or cgroup around it on the farm host.
 */
const MAX_SCREENSHOT_PIXELS = VIEWPORT.width * MAX_SCREENSHOT_HEIGHT;
/** Roles the tree leaves out when they carry no name (their children move up). */
const STRUCTURAL_ROLES = new Set(['generic', 'none', 'presentation', 'InlineTextBox', 'LineBreak']);

interface AxNode {
  nodeId: string;
  ignored?: boolean;
  role?: { value?: string };
  name?: { value?: string };
  value?: { value?: unknown };
  properties?: Array<{ name: string; value: { value?: unknown } }>;
  childIds?: string[];
  backendDOMNodeId?: number;
}

interface LifecycleEvent {
  frameId: string;
  loaderId: string;
  name: string;
}

export class BrowserPage {
  private readonly cdp: CdpPipe;
  private readonly sessionId: string;
  private readonly frameId: string;
  /** Lifecycle events of the main frame since the current action began. */
  private lifecycle: LifecycleEvent[] = [];
  private readonly lifecycleWaiters = new Set<() => void>();
  /** HTTP status of each main-frame document, by loader. */
  private readonly documentStatus = new Map<string, number>();

  private constructor(cdp: CdpPipe, sessionId: string, frameId: string) {
    this.cdp = cdp;
    this.sessionId = sessionId;
    this.frameId = frameId;
  }

  /** Takes over the browser's one tab and sets it up. */
  static async attach(cdp: CdpPipe): Promise<BrowserPage> {
    const { targetInfos } = (await cdp.send('Target.getTargets')) as {
      targetInfos: Array<{ targetId: string; type: string }>;
    };
    const tab =
      targetInfos.find((target) => target.type === 'page')?.targetId ??
      ((await cdp.send('Target.createTarget', { url: 'about:blank' })) as { targetId: string })
        .targetId;
    const { sessionId } = (await cdp.send('Target.attachToTarget', {
      targetId: tab,
      flatten: true,
    })) as { sessionId: string };
    const { frameTree } = (await cdp.send('Page.getFrameTree', {}, { sessionId })) as {
      frameTree: { frame: { id: string } };
    };
    const page = new BrowserPage(cdp, sessionId, frameTree.frame.id);
    await page.setUp(tab);
    return page;
  }

  private async setUp(tab: string): Promise<void> {
    const { cdp, sessionId } = this;
    cdp.onClose(() => {
      for (const wake of this.lifecycleWaiters) wake();
    });
    cdp.on('Page.lifecycleEvent', (params, from) => {
      if (from !== sessionId || params.frameId !== this.frameId) return;
      this.lifecycle.push(params as unknown as LifecycleEvent);
      for (const wake of this.lifecycleWaiters) wake();
    });
    cdp.on('Network.responseReceived', (params, from) => {
      const response = params as {
        type?: string;
        loaderId?: string;
        frameId?: string;
        response?: { status?: number };
      };
      if (from !== sessionId || response.type !== 'Document' || response.frameId !== this.frameId)
        return;
      if (response.loaderId && typeof response.response?.status === 'number') {
        this.documentStatus.set(response.loaderId, response.response.status);
      }
    });
    // A dialog would block the page; beforeunload is accepted so navigation goes on.
    cdp.on('Page.javascriptDialogOpening', (params, from) => {
      if (from !== sessionId) return;
      void cdp
        .send(
          'Page.handleJavaScriptDialog',
          { accept: params.type === 'beforeunload' },
          { sessionId },
        )
        .catch(() => undefined);
    });
    // A popup would be a second tab nobody drives; it is closed at once.
    cdp.on('Target.targetCreated', (params) => {
      const info = params.targetInfo as { targetId: string; type: string; openerId?: string };
      if (info.type === 'page' && info.targetId !== tab) {
        void cdp.send('Target.closeTarget', { targetId: info.targetId }).catch(() => undefined);
      }
    });
    await Promise.all([
      cdp.send('Target.setDiscoverTargets', { discover: true }),
      cdp.send('Browser.setDownloadBehavior', { behavior: 'deny' }),
      cdp.send('Page.enable', {}, { sessionId }),
      cdp.send('Page.setLifecycleEventsEnabled', { enabled: true }, { sessionId }),
      // The window's size less Chromium's own UI would be the viewport otherwise.
      cdp.send(
        'Emulation.setDeviceMetricsOverride',
        { ...VIEWPORT, deviceScaleFactor: 1, mobile: false },
        { sessionId },
      ),
      cdp.send('Network.enable', {}, { sessionId }),
    ]);
  }

  /** Loads `url` and waits for `waitUntil`; answers the document's HTTP status. */
  async navigate(url: string, waitUntil: WaitUntil, timeoutMs: number): Promise<number | null> {
    this.lifecycle = [];
    const result = (await this.send('Page.navigate', { url }, timeoutMs)) as {
      loaderId?: string;
      errorText?: string;
    };
    if (result.errorText) {
      throw new PageActionError('navigation_failed', `${url} did not load: ${result.errorText}`);
    }
    // No loader: a same-document navigation (a #fragment), already done.
    if (!result.loaderId) return null;
    await this.waitForLifecycle(result.loaderId, LIFECYCLE[waitUntil], timeoutMs);
    return this.documentStatus.get(result.loaderId) ?? null;
  }

  /** A left click at the element's centre, then any navigation it starts is waited for. */
  async click(target: ElementTarget, timeoutMs: number): Promise<void> {
    const node = await this.resolve(target);
    const { x, y } = await this.centreOf(node);
    this.lifecycle = [];
    const mouse = { x, y, button: 'left', clickCount: 1 };
    await this.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x, y });
    await this.send('Input.dispatchMouseEvent', { type: 'mousePressed', ...mouse });
    await this.send('Input.dispatchMouseEvent', { type: 'mouseReleased', ...mouse });
    await this.settle(timeoutMs);
  }

  /** Focuses the element, replaces (or extends) its text, and presses Enter when asked. */
  async type(
    target: ElementTarget,
    text: string,
    options: { clear: boolean; submit: boolean },
    timeoutMs: number,
  ): Promise<void> {
    const node = await this.resolve(target);
    await this.send('DOM.scrollIntoViewIfNeeded', { backendNodeId: node }).catch(() => undefined);
    try {
      await this.send('DOM.focus', { backendNodeId: node });
    } catch (error) {
      throw new PageActionError('invalid_target', 'That element cannot take keyboard input.', {
        cause: error,
      });
    }
    if (options.clear) {
      await this.key({ key: 'a', code: 'KeyA', modifiers: 2, commands: ['selectAll'] });
      if (text === '') await this.key({ key: 'Delete', code: 'Delete', windowsVirtualKeyCode: 46 });
    }
    if (text !== '') await this.send('Input.insertText', { text });
    if (options.submit) {
      this.lifecycle = [];
      await this.key({ key: 'Enter', code: 'Enter', windowsVirtualKeyCode: 13, text: '\r' });
      await this.settle(timeoutMs);
    }
  }

  /** The page's visible text (innerText), cut at `maxChars`. */
  async readText(maxChars: number): Promise<{ text: string; truncated: boolean }> {
    const text = String(
      (await this.evaluateIsolated('document.body ? document.body.innerText : ""')) ?? '',
    );
    return { text: text.slice(0, maxChars), truncated: text.length > maxChars };
  }

  /**
   * The accessibility tree as an indented outline, one node a line: role, "name", state and a
   * ref (`[ref=n123]`) that click and type accept.
   */
  async accessibilityTree(maxChars: number): Promise<{ tree: string; truncated: boolean }> {
    const { nodes } = (await this.send('Accessibility.getFullAXTree', {})) as { nodes: AxNode[] };
    const byId = new Map(nodes.map((node) => [node.nodeId, node]));
    const lines: string[] = [];
    let size = 0;
    let truncated = false;
    const visit = (node: AxNode, depth: number, parentName: string) => {
      if (truncated) return;
      const name = axName(node);
      // A link's or a button's own text repeats its name: shown once.
      const repeated = node.role?.value === 'StaticText' && name === parentName;
      const shown = repeated ? null : describeAxNode(node);
      if (shown !== null) {
        const line = `${'  '.repeat(depth)}- ${shown}`;
        if (size + line.length + 1 > maxChars) {
          truncated = true;
          return;
        }
        lines.push(line);
        size += line.length + 1;
      }
      for (const childId of node.childIds ?? []) {
        const child = byId.get(childId);
        if (child) visit(child, shown === null ? depth : depth + 1, name || parentName);
      }
    };
    const root = nodes[0];
    if (root) visit(root, 0, '');
    return { tree: lines.join('\n'), truncated };
  }

  /** A PNG of the viewport, or of the whole page up to a height limit. */
  async screenshot(fullPage: boolean): Promise<{ data: string; width: number; height: number }> {
    let width = VIEWPORT.width;
    let height = VIEWPORT.height;
    let clip: Record<string, number> | undefined;
    if (fullPage) {
      const metrics = (await this.send('Page.getLayoutMetrics', {})) as {
        cssContentSize: { width: number; height: number };
      };
      width = Math.max(1, Math.min(MAX_SCREENSHOT_WIDTH, Math.ceil(metrics.cssContentSize.width)));
      height = Math.max(
        1,
        Math.min(
          MAX_SCREENSHOT_HEIGHT,
          Math.floor(MAX_SCREENSHOT_PIXELS / width),
          Math.ceil(metrics.cssContentSize.height),
        ),
      );
      clip = { x: 0, y: 0, width, height, scale: 1 };
    }
    const { data } = (await this.send('Page.captureScreenshot', {
      format: 'png',
      ...(clip ? { clip, captureBeyondViewport: true } : {}),
    })) as { data: string };
    return { data, width, height };
  }

  /**
   * Runs `expression` in the page's own world (awaiting a promise) and answers its JSON value,
   * or the exception it threw.
   */
  async evaluate(
    expression: string,
    timeoutMs: number,
  ): Promise<{ value: unknown } | { exception: string }> {
    const result = (await this.send(
      'Runtime.evaluate',
      {
        expression,
        returnByValue: true,
        awaitPromise: true,
        userGesture: true,
        timeout: timeoutMs,
      },
      timeoutMs + 1_000,
    )) as {
      result?: { value?: unknown; type?: string; description?: string };
      exceptionDetails?: { text?: string; exception?: { description?: string } };
    };
    if (result.exceptionDetails) {
      const details = result.exceptionDetails;
      return { exception: details.exception?.description ?? details.text ?? 'exception' };
    }
    return { value: result.result?.value ?? null };
  }

  /** The page's URL and title as they are now. */
  async location(): Promise<{ url: string; title: string }> {
    const value = (await this.evaluateIsolated(
      '({ url: location.href, title: document.title })',
    )) as {
      url?: string;
      title?: string;
    } | null;
    return { url: value?.url ?? 'about:blank', title: value?.title ?? '' };
  }

  private send(method: string, params: Record<string, unknown>, timeoutMs?: number) {
    return this.cdp.send(method, params, { sessionId: this.sessionId, timeoutMs });
  }

  private key(event: Record<string, unknown>): Promise<unknown> {
    return this.send('Input.dispatchKeyEvent', { type: 'keyDown', ...event }).then(() =>
      this.send('Input.dispatchKeyEvent', {
        type: 'keyUp',
        ...event,
        text: undefined,
        commands: undefined,
      }),
    );
  }

  /** Evaluates a read in a fresh isolated world of the main frame (the page cannot patch it). */
  private async evaluateIsolated(expression: string): Promise<unknown> {
    const { executionContextId } = (await this.send('Page.createIsolatedWorld', {
      frameId: this.frameId,
      worldName: 'capture-farm',
    })) as { executionContextId: number };
    const result = (await this.send('Runtime.evaluate', {
      expression,
      contextId: executionContextId,
      returnByValue: true,
    })) as { result?: { value?: unknown } };
    return result.result?.value ?? null;
  }

  /** The backend node id of a target; a ref is one already. */
  private async resolve(target: ElementTarget): Promise<number> {
    if ('ref' in target) {
      const backendNodeId = Number(target.ref.slice(1));
      try {
        await this.send('DOM.describeNode', { backendNodeId });
      } catch (error) {
        throw new PageActionError(
          'element_not_found',
          `No element has ref ${target.ref} now (refs change with the page; read accessibility_tree again).`,
          { cause: error },
        );
      }
      return backendNodeId;
    }
    const { root } = (await this.send('DOM.getDocument', { depth: 0 })) as {
      root: { nodeId: number };
    };
    let nodeId: number;
    try {
      ({ nodeId } = (await this.send('DOM.querySelector', {
        nodeId: root.nodeId,
        selector: target.selector,
      })) as { nodeId: number });
    } catch (error) {
      if (error instanceof CdpError && error.cdpCode !== null) {
        throw new PageActionError(
          'invalid_target',
          `"${target.selector}" is not a valid CSS selector.`,
          {
            cause: error,
          },
        );
      }
      throw error;
    }
    if (!nodeId) {
      throw new PageActionError('element_not_found', `No element matches "${target.selector}".`);
    }
    const { node } = (await this.send('DOM.describeNode', { nodeId })) as {
      node: { backendNodeId: number };
    };
    return node.backendNodeId;
  }

  /** Scrolls the element into view and answers the centre of its first visible box. */
  private async centreOf(backendNodeId: number): Promise<{ x: number; y: number }> {
    await this.send('DOM.scrollIntoViewIfNeeded', { backendNodeId }).catch(() => undefined);
    const { quads } = (await this.send('DOM.getContentQuads', { backendNodeId }).catch(() => ({
      quads: [],
    }))) as { quads: number[][] };
    const quad = quads.find((points) => quadArea(points) > 1);
    if (!quad) {
      throw new PageActionError(
        'invalid_target',
        'That element is not visible, so it cannot be clicked.',
      );
    }
    const xs = [quad[0], quad[2], quad[4], quad[6]] as number[];
    const ys = [quad[1], quad[3], quad[5], quad[7]] as number[];
    return {
      x: xs.reduce((sum, value) => sum + value, 0) / 4,
      y: ys.reduce((sum, value) => sum + value, 0) / 4,
    };
  }

  /** After input: if the main frame began loading a new document, waits for it to load. */
  private async settle(timeoutMs: number): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const started = this.lifecycle.find((event) => event.name === 'init');
    if (started) await this.waitForLifecycle(started.loaderId, 'load', timeoutMs);
  }

  private waitForLifecycle(loaderId: string, name: string, timeoutMs: number): Promise<void> {
    const reached = () =>
      this.lifecycle.some((event) => event.loaderId === loaderId && event.name === name);
    if (reached()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = (error?: Error) => {
        clearTimeout(timer);
        this.lifecycleWaiters.delete(wake);
        if (error) reject(error);
        else resolve();
      };
      const wake = () => {
        if (reached()) done();
        else if (this.cdp.closed)
          done(new PageActionError('navigation_failed', 'The browser closed.'));
      };
      const timer = setTimeout(
        () =>
          done(
            new PageActionError(
              'timeout',
              `The page did not reach "${name}" within ${timeoutMs} ms.`,
            ),
          ),
        timeoutMs,
      );
      this.lifecycleWaiters.add(wake);
    });
  }
}

function quadArea(points: number[]): number {
  let area = 0;
  for (let i = 0; i < 4; i++) {
    const [x1, y1] = [points[i * 2] as number, points[i * 2 + 1] as number];
    const [x2, y2] = [points[((i + 1) % 4) * 2] as number, points[((i + 1) % 4) * 2 + 1] as number];
    area += x1 * y2 - x2 * y1;
  }
  return Math.abs(area) / 2;
}

function axName(node: AxNode): string {
  return typeof node.name?.value === 'string' ? node.name.value.trim() : '';
}

/** One line of the outline, or null for a node that only groups others. */
function describeAxNode(node: AxNode): string | null {
  if (node.ignored) return null;
  const role = node.role?.value ?? 'unknown';
  const name = axName(node);
  if (STRUCTURAL_ROLES.has(role) && name === '') return null;
  if (role === 'StaticText') return name === '' ? null : `text ${JSON.stringify(name)}`;
  const parts = [role === 'RootWebArea' ? 'document' : role];
  if (name !== '') parts.push(JSON.stringify(name));
  const value = node.value?.value;
  if (value !== undefined && value !== '' && value !== null)
    parts.push(`value=${JSON.stringify(value)}`);
  for (const property of node.properties ?? []) {
    const state = property.value.value;
    if (
      ['focused', 'disabled', 'checked', 'expanded', 'selected', 'required'].includes(property.name)
    ) {
      if (state === true || state === 'true' || state === 'mixed')
        parts.push(`[${property.name}${state === 'mixed' ? '=mixed' : ''}]`);
    } else if (property.name === 'level') {
      parts.push(`[level=${String(state)}]`);
    }
  }
  if (node.backendDOMNodeId !== undefined) parts.push(`[ref=n${node.backendDOMNodeId}]`);
  return parts.join(' ');
}
