// The set-up page a device opens from the capture proxy (like mitmproxy's mitm.it): the proxy
// settings, the CA downloads, steps per platform and a live check of the device's traffic. Plain
// server-rendered HTML; its script and stylesheet are separate assets because the CSP is strict.
import type { PlatformSteps } from './platform-steps.ts';

export type SetupView = {
  deviceName: string | null;
  pacUrl: string | null;
  manualProxy: string;
  caPemUrl: string;
  caDerUrl: string;
  mobileconfigUrl: string;
  statusUrl: string | null;
  steps: PlatformSteps[];
  /** Where SETUP_SCRIPT and SETUP_STYLE are served, without a trailing slash: `/setup/assets`. */
  assetBase: string;
};

/** One server-sent event of the status stream at `statusUrl`, as JSON in its `data`. */
export type SetupStatus = {
  /** A request from this device arrived on its port. */
  seen: boolean;
  lastSeenAt: string | null;
  /** The last request: plain HTTP, intercepted HTTPS, TLS passed through, or a WebSocket. */
  connection: 'http' | 'https' | 'tunnel' | 'websocket' | null;
  listener: 'device-port' | 'shared-port' | null;
  /** The TLS handshake with our leaf certificate failed: the device does not trust the CA. */
  caProblem: { host: string; at: string; reason: string } | null;
};

/** The Content-Security-Policy the page is served with: same-origin assets only, nothing inline. */
export const SETUP_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
  "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function renderSetupPage(view: SetupView): string {
  const title = view.deviceName === null ? 'Set up a device' : `Set up ${view.deviceName}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="${escapeHtml(`${view.assetBase}/setup.css`)}">
<script type="module" src="${escapeHtml(`${view.assetBase}/setup.js`)}"></script>
</head>
<body>
<main>
<h1>${escapeHtml(title)}</h1>
${view.deviceName === null ? UNATTRIBUTED_NOTE : ''}
${renderProxySection(view)}
${renderCertificateSection(view)}
${renderPlatformSection(view.steps)}
${view.statusUrl === null ? '' : renderLiveCheck(view.statusUrl)}
</main>
</body>
</html>
`;
}

/** Text for HTML content and double- or single-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

const UNATTRIBUTED_NOTE = `<p class="note">This page is not tied to a device. Open the device's
own set-up link from the dashboard instead: that attributes its traffic to it.</p>`;

function renderProxySection(view: SetupView): string {
  const pac = view.pacUrl
    ? `<p>Automatic proxy configuration (PAC) URL:</p>\n${renderCopyRow(view.pacUrl)}`
    : '<p class="note">This device has no port yet, so there is no PAC URL: use the manual ' +
      'proxy.</p>';
  return `<section aria-labelledby="proxy-heading">
<h2 id="proxy-heading">Proxy</h2>
${pac}
<p>Manual proxy, for HTTP and HTTPS:</p>
${renderCopyRow(view.manualProxy)}
</section>`;
}

function renderCopyRow(value: string): string {
  const escaped = escapeHtml(value);
  return `<div class="copy"><code>${escaped}</code>
<button type="button" data-copy="${escaped}">Copy</button></div>`;
}

function renderCertificateSection(view: SetupView): string {
  // No file name for the profile: with `download` Safari saves it to Files instead of offering to
  // install it, as it does for a response of the profile's content type.
  return `<section aria-labelledby="certificate-heading">
<h2 id="certificate-heading">Capture CA certificate</h2>
<p>Install it and trust it, so that this device's HTTPS can be decrypted.</p>
<ul class="downloads">
${renderDownload(view.mobileconfigUrl, 'Configuration profile', 'iOS, iPadOS, macOS', null)}
${renderDownload(view.caDerUrl, 'DER certificate', 'Android, Windows, ChromeOS', 'capture-ca.der')}
${renderDownload(view.caPemUrl, 'PEM certificate', 'Linux, Firefox', 'capture-ca.pem')}
</ul>
</section>`;
}

function renderDownload(href: string, label: string, platforms: string, fileName: string | null) {
  const download = fileName === null ? '' : ` download="${escapeHtml(fileName)}"`;
  return `<li><a href="${escapeHtml(href)}"${download}>${escapeHtml(label)}
<span>${escapeHtml(platforms)}</span></a></li>`;
}

function renderPlatformSection(platforms: PlatformSteps[]): string {
  const details = platforms.map(
    (platform) => `<details data-platform="${escapeHtml(platform.id)}">
<summary>${escapeHtml(platform.name)}</summary>
<ol>
${platform.steps.map((step) => `<li>${escapeHtml(step)}</li>`).join('\n')}
</ol>
</details>`,
  );
  return `<section aria-labelledby="steps-heading">
<h2 id="steps-heading">Steps for your platform</h2>
${details.join('\n')}
</section>`;
}

function renderLiveCheck(statusUrl: string): string {
  return `<section id="live-check" data-status-url="${escapeHtml(statusUrl)}" data-state="waiting"
 aria-labelledby="live-check-heading">
<h2 id="live-check-heading">Live check</h2>
<p class="live-summary" aria-live="polite">Waiting for the first request from this device…</p>
<p class="live-detail"></p>
<p class="live-warning" role="alert" hidden></p>
<p class="live-connection"></p>
</section>`;
}

/**
 * The page's script, served as JavaScript (`text/javascript`: it loads as a module, for which
 * browsers check the type). Values from the status stream are set with textContent only.
 */
export const SETUP_SCRIPT = `// Copy buttons, this platform's steps opened, and the live check.
const NOT_YET = 'Not yet: set the proxy (PAC URL or manual proxy above) and open any web page.';
const CONNECTIONS = {
  http: 'plain HTTP',
  https: 'HTTPS, decrypted: the CA is trusted',
  tunnel: 'HTTPS passed through without decryption',
  websocket: 'WebSocket',
};
const LISTENERS = { 'device-port': 'on its own port', 'shared-port': 'on the shared proxy port' };

for (const button of document.querySelectorAll('button[data-copy]')) {
  button.addEventListener('click', () => copyValue(button));
}

// The Clipboard API exists only in secure contexts, and a phone opens this page over plain http
// on the LAN; there the value is selected, for the legacy copy command or the user to copy.
function copyValue(button) {
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(button.dataset.copy).then(
      () => labelButton(button, 'Copied'),
      () => selectValue(button),
    );
  } else {
    selectValue(button);
  }
}

function selectValue(button) {
  const range = document.createRange();
  range.selectNodeContents(button.parentElement.querySelector('code'));
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  labelButton(button, document.execCommand('copy') ? 'Copied' : 'Selected');
}

function labelButton(button, text) {
  button.textContent = text;
  setTimeout(() => {
    button.textContent = 'Copy';
  }, 2000);
}

const platform = detectPlatform(navigator.userAgent);
openSteps(platform);
// Desktop Firefox keeps a trust store of its own, so its steps apply as well.
if (navigator.userAgent.includes('Firefox/') && platform !== 'android') openSteps('firefox');

function detectPlatform(userAgent) {
  if (/iPhone|iPad|iPod/.test(userAgent)) return 'ios';
  if (userAgent.includes('Android')) return 'android';
  if (userAgent.includes('CrOS')) return 'chromeos';
  // iPadOS asks for desktop pages with a Mac user agent; only the iPad has a touch screen.
  if (userAgent.includes('Mac')) return navigator.maxTouchPoints > 1 ? 'ios' : 'macos';
  if (userAgent.includes('Windows')) return 'windows';
  if (userAgent.includes('Linux')) return 'linux';
  return null;
}

function openSteps(id) {
  const details = document.querySelector('details[data-platform="' + id + '"]');
  if (details) details.open = true;
}

const liveCheck = document.getElementById('live-check');
if (liveCheck && window.EventSource) watchStatus(liveCheck);

function watchStatus(section) {
  const summary = section.querySelector('.live-summary');
  const detail = section.querySelector('.live-detail');
  const warning = section.querySelector('.live-warning');
  const connection = section.querySelector('.live-connection');
  const source = new EventSource(section.dataset.statusUrl);
  // After a network error EventSource reconnects by itself; it gives up only on a refusal.
  source.addEventListener('error', () => {
    const closed = source.readyState === EventSource.CLOSED;
    connection.textContent = closed ? 'Live check stopped: reload the page.' : 'reconnecting…';
  });
  source.addEventListener('open', () => {
    connection.textContent = '';
  });
  source.addEventListener('message', (event) => {
    let status;
    try {
      status = JSON.parse(event.data);
    } catch {
      return;
    }
    const state = status.caProblem ? 'ca-problem' : status.seen ? 'seen' : 'waiting';
    section.dataset.state = state;
    summary.textContent = status.seen ? 'We see this device' : NOT_YET;
    detail.textContent = status.seen ? describeLastRequest(status) : '';
    warning.hidden = !status.caProblem;
    warning.textContent = status.caProblem
      ? 'HTTPS to ' + status.caProblem.host + ' failed: this device does not trust the ' +
        'Capture CA yet. Install and trust the certificate above.'
      : '';
  });
}

function describeLastRequest(status) {
  const parts = [CONNECTIONS[status.connection] || 'a request'];
  if (status.lastSeenAt) parts.push('at ' + new Date(status.lastSeenAt).toLocaleTimeString());
  if (LISTENERS[status.listener]) parts.push(LISTENERS[status.listener]);
  return 'Last request: ' + parts.join(', ') + '.';
}
`;

/** The page's stylesheet, served as `text/css`: phone-sized, light and dark. */
export const SETUP_STYLE = `:root {
  color-scheme: light dark;
  --background: #ffffff;
  --text: #1b1b1f;
  --muted: #5c5c66;
  --line: #d4d4dc;
  --panel: #f3f3f6;
  --accent: #0b57d0;
  --ok: #11734f;
  --warn: #b3261e;
}
@media (prefers-color-scheme: dark) {
  :root {
    --background: #121216;
    --text: #ececf1;
    --muted: #a3a3ad;
    --line: #383840;
    --panel: #1e1e24;
    --accent: #8ab4f8;
    --ok: #5ad19a;
    --warn: #ff8a80;
  }
}
body {
  margin: 0;
  background: var(--background);
  color: var(--text);
  font: 17px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  -webkit-text-size-adjust: 100%;
}
main { max-width: 40rem; margin: 0 auto; padding: 1rem 1rem 3rem; }
h1 { font-size: 1.6rem; line-height: 1.25; margin: 0.5rem 0 1rem; overflow-wrap: anywhere; }
h2 { font-size: 1.2rem; margin: 1.75rem 0 0.5rem; }
code { font: 0.95em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.note, .live-detail, .live-connection { color: var(--muted); }
.copy {
  display: flex;
  gap: 0.5rem;
  align-items: center;
  padding: 0.375rem 0.375rem 0.375rem 0.75rem;
  background: var(--panel);
  border: 1px solid var(--line);
  border-radius: 0.5rem;
}
.copy code { flex: 1; overflow-wrap: anywhere; user-select: all; -webkit-user-select: all; }
button {
  min-width: 5.5rem;
  min-height: 2.75rem;
  font: inherit;
  font-weight: 600;
  color: var(--background);
  background: var(--accent);
  border: 0;
  border-radius: 0.5rem;
}
.downloads { display: grid; gap: 0.5rem; padding: 0; list-style: none; }
.downloads a {
  display: block;
  padding: 0.625rem 0.75rem;
  color: var(--accent);
  font-weight: 600;
  text-decoration: none;
  border: 1px solid var(--line);
  border-radius: 0.5rem;
}
.downloads span { display: block; color: var(--muted); font-weight: 400; font-size: 0.9em; }
details { margin: 0.5rem 0; border: 1px solid var(--line); border-radius: 0.5rem; }
summary { padding: 0.625rem 0.75rem; font-weight: 600; cursor: pointer; }
details ol { margin: 0; padding: 0 0.75rem 0.75rem 2.25rem; }
details li { margin: 0.375rem 0; overflow-wrap: anywhere; }
#live-check { padding: 0 1rem; border: 2px solid var(--line); border-radius: 0.5rem; }
#live-check h2 { margin-top: 1rem; }
#live-check[data-state="seen"] { border-color: var(--ok); }
#live-check[data-state="seen"] .live-summary { color: var(--ok); font-weight: 600; }
#live-check[data-state="ca-problem"] { border-color: var(--warn); }
.live-warning { color: var(--warn); font-weight: 600; }
`;
