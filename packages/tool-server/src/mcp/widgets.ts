// MCP Apps widgets (the `ui://` extension): HTML views of a tool's result that hosts render in a
// sandboxed frame. Each bundle's URI carries a hash of its content, so a host caches it safely;
// any older hash of the same widget is answered with the current bundle (001 §6), because a host
// may still hold a tool list from before a deploy.
import { createHash } from 'node:crypto';
import { renderWidgetHtml, WIDGET_VIEWS, type WidgetName } from './widget-html.ts';

export const WIDGET_MIME_TYPE = 'text/html;profile=mcp-app';
const URI_PREFIX = 'ui://capture-platform/';
const URI_PATTERN = /^ui:\/\/capture-platform\/([a-z-]+)-([0-9a-f]{12})\.html$/;

export interface WidgetBundle {
  name: WidgetName;
  uri: string;
  html: string;
}

function buildBundle(name: WidgetName): WidgetBundle {
  const html = renderWidgetHtml(name);
  const hash = createHash('sha256').update(html).digest('hex').slice(0, 12);
  return { name, uri: `${URI_PREFIX}${name}-${hash}.html`, html };
}

const BUNDLES: ReadonlyMap<string, WidgetBundle> = new Map(
  (Object.keys(WIDGET_VIEWS) as WidgetName[]).map((name) => [name, buildBundle(name)]),
);

export function currentWidgets(): WidgetBundle[] {
  return [...BUNDLES.values()];
}

export function widgetUri(name: string): string | undefined {
  return BUNDLES.get(name)?.uri;
}

/** The current bundle for a widget URI of any hash; undefined for anything else. */
export function widgetForUri(uri: string): WidgetBundle | undefined {
  const match = URI_PATTERN.exec(uri);
  return match ? BUNDLES.get(match[1] as string) : undefined;
}
