// What `/config.json` holds: the deployment's URLs and public key, read at run time so one build
// serves any deployment. Shared by the app (which fetches it) and the server (which serves it).

export type DashboardRuntimeConfig = {
  /** The Supabase API (`SUPABASE_URL`): auth, REST and Realtime. */
  supabaseUrl: string;
  /** The publishable (anon) key: public by design, it only identifies the project. */
  supabasePublishableKey: string;
  /** The tool server `{mcp_url}` (001 §4.1): its consent API is called from the browser. */
  mcpUrl: string;
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
  return {
    supabaseUrl: readHttpUrl(raw.supabaseUrl, 'supabaseUrl'),
    supabasePublishableKey: key,
    mcpUrl: readHttpUrl(raw.mcpUrl, 'mcpUrl'),
  };
}
