// What `/config.json` holds: the deployment's URLs and public key, read at run time so one build
// serves any deployment. Shared by the app (which fetches it) and the server (which serves it).

export type DashboardRuntimeConfig = {
  /** The Supabase API (`SUPABASE_URL`): auth, REST and Realtime. */
  supabaseUrl: string;
  /** The publishable (anon) key: public by design, it only identifies the project. */
  supabasePublishableKey: string;
  /** The tool server `{mcp_url}` (001 §4.1): its consent API is called from the browser. */
  mcpUrl: string;
  /** The capture proxy, when the deployment has one (Devices page: PAC URL, CA, manual setup). */
  proxy?: DashboardProxyConfig;
};

export type DashboardProxyConfig = {
  /** `{proxy_url}`, the management listener: `/ca.pem`, `/ca.der`, `/allocate` (docs/proxy.md). */
  managementUrl: string;
  /** The PAC URL with `{port}` for the device port (002 §4.4: `http://<port>.{proxy_domain}/`). */
  pacUrlTemplate: string;
  /** `host:port` of the shared manual listener (002 §4.3: `{proxy_host}:8888`). */
  manualProxy: string;
  /**
   * Where the proxy serves device set-up pages (`<setupUrl>/setup/<token>`, docs/devices.md): the
   * address phones reach, the LAN address in LAN mode. Absent: the management URL.
   */
  setupUrl?: string;
};

function readHttpUrl(value: unknown, name: string): string {
  if (typeof value !== 'string') throw new Error(`${name} must be a string`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${name} is not a URL: ${value}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`${name} must be an http(s) URL: ${value}`);
  }
  // Without the trailing slash, `${url}/path` joins the way every caller expects.
  return value.replace(/\/+$/, '');
}

/** Validates a runtime config; throws an Error naming the bad field. */
export function parseRuntimeConfig(value: unknown): DashboardRuntimeConfig {
  if (typeof value !== 'object' || value === null) throw new Error('config must be an object');
  const raw = value as Record<string, unknown>;
  const key = raw.supabasePublishableKey;
  if (typeof key !== 'string' || key.length === 0) {
    throw new Error('supabasePublishableKey must be a non-empty string');
  }
  const config: DashboardRuntimeConfig = {
    supabaseUrl: readHttpUrl(raw.supabaseUrl, 'supabaseUrl'),
    supabasePublishableKey: key,
    mcpUrl: readHttpUrl(raw.mcpUrl, 'mcpUrl'),
  };
  if (raw.proxy !== undefined) config.proxy = parseProxyConfig(raw.proxy);
  return config;
}

function parseProxyConfig(value: unknown): DashboardProxyConfig {
  if (typeof value !== 'object' || value === null) throw new Error('proxy must be an object');
  const raw = value as Record<string, unknown>;
  const template = raw.pacUrlTemplate;
  if (typeof template !== 'string' || !template.includes('{port}')) {
    throw new Error('proxy.pacUrlTemplate must be a string containing {port}');
  }
  readHttpUrl(template.replace('{port}', '1'), 'proxy.pacUrlTemplate');
  const manual = raw.manualProxy;
  if (typeof manual !== 'string' || !/^[A-Za-z0-9.[\]:-]+:\d{1,5}$/.test(manual)) {
    throw new Error('proxy.manualProxy must be host:port');
  }
  const managementUrl = readHttpUrl(raw.managementUrl, 'proxy.managementUrl');
  return {
    managementUrl,
    pacUrlTemplate: template,
    manualProxy: manual,
    setupUrl:
      raw.setupUrl === undefined ? managementUrl : readHttpUrl(raw.setupUrl, 'proxy.setupUrl'),
  };
}
