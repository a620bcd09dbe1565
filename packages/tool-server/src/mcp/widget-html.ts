// The widgets' HTML: one small self-contained page per view (no external scripts or styles, as
// MCP Apps hosts sandbox them), speaking the MCP Apps postMessage protocol: it announces itself
// with ui/initialize and renders the tool result the host sends in ui/notifications/tool-result.

export const WIDGET_VIEWS = {
  'traffic-summary': 'Traffic summary',
  'status-board': 'Status board',
  'request-detail': 'Request',
} as const;

export type WidgetName = keyof typeof WIDGET_VIEWS;

const STYLE = `body{font:14px system-ui,sans-serif;margin:12px;color:#1b1f24}
h1{font-size:16px;margin:0 0 8px}table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid #e3e6ea;padding:4px 6px;text-align:left;vertical-align:top}
th{color:#57606a;font-weight:600}.num{text-align:right}.bad{color:#b42318}.ok{color:#1a7f37}
pre{white-space:pre-wrap;word-break:break-all;background:#f6f8fa;padding:8px}`;

/** Renders any JSON result as nested tables; each view only chooses what comes first. */
const SCRIPT = `
const view = document.body.dataset.view;
const root = document.getElementById('root');
function cell(value) {
  if (value === null || value === undefined) return '';
  if (typeof value !== 'object') return String(value);
  return '<pre>' + JSON.stringify(value, null, 2).replace(/[&<>]/g, (c) => '&#' + c.charCodeAt(0) + ';') + '</pre>';
}
function table(object) {
  const rows = Object.entries(object).map(([key, value]) =>
    '<tr><th>' + key.replace(/[&<>]/g, '') + '</th><td>' + (Array.isArray(value) && value.length && typeof value[0] === 'object' ? list(value) : cell(value)) + '</td></tr>');
  return '<table>' + rows.join('') + '</table>';
}
function list(items) {
  const keys = Object.keys(items[0]);
  const head = '<tr>' + keys.map((k) => '<th>' + k.replace(/[&<>]/g, '') + '</th>').join('') + '</tr>';
  const body = items.map((item) => '<tr>' + keys.map((k) => '<td>' + cell(item[k]) + '</td>').join('') + '</tr>');
  return '<table>' + head + body.join('') + '</table>';
}
function render(result) {
  const data = result && (result.structuredContent || (result.content && result.content[0] && JSON.parse(result.content[0].text)));
  if (!data) { root.textContent = 'No data.'; return; }
  root.innerHTML = table(data);
}
window.addEventListener('message', (event) => {
  const message = event.data;
  if (message && message.method === 'ui/notifications/tool-result') render(message.params);
});
window.parent.postMessage({ jsonrpc: '2.0', id: 1, method: 'ui/initialize',
  params: { appInfo: { name: 'capture-platform-' + view, version: '1' }, appCapabilities: {} } }, '*');
`;

export function renderWidgetHtml(name: WidgetName): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${WIDGET_VIEWS[name]}</title>
<style>${STYLE}</style></head><body data-view="${name}"><h1>${WIDGET_VIEWS[name]}</h1>
<div id="root">Waiting for the result…</div><script>${SCRIPT}</script></body></html>`;
}
