// The tool server's Android-over-USB routes as the Devices page calls them: the phones on the
// tool server's adb, point one at a device's capture port, revert it. Authenticated only by the
// session's bearer token (no cookies), like the consent API.

export type AdbPhone = { serial: string; state: string; model: string | null };

export type AndroidTraffic = {
  seen: boolean;
  connection: string | null;
  listener: string | null;
  last_seen_at: string | null;
  ca_problem: { host: string; at: string; reason: string } | null;
  /** One sentence for people: what arrived, or what to do. */
  summary: string;
};

export type AndroidConnectResult = {
  serial: string;
  model: string | null;
  proxy: string;
  reverse: boolean;
  commands: string[];
  ca_install_steps: string;
  traffic: AndroidTraffic;
};

export type AndroidRevertResult = { serial: string; commands: string[] };

/** Closed set; the component branches on it. */
export type AndroidSetupApiErrorCode =
  /** The tool server has no adb configured (the routes answer 404). */
  | 'not_configured'
  | 'signed_out'
  /** The role may not edit devices, or not this one. */
  | 'forbidden'
  | 'not_found'
  /** No phone, several, or one that has not accepted USB debugging: `serials` may list them. */
  | 'phone_not_ready'
  | 'adb_unavailable'
  | 'unavailable'
  | 'failed';

export class AndroidSetupApiError extends Error {
  readonly code: AndroidSetupApiErrorCode;
  readonly status: number;
  readonly serials: string[];

  constructor(
    code: AndroidSetupApiErrorCode,
    status: number,
    message: string,
    options: { serials?: string[]; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'AndroidSetupApiError';
    this.code = code;
    this.status = status;
    this.serials = options.serials ?? [];
  }
}

export type AndroidSetupApiOptions = {
  mcpUrl: string;
  accessToken: string;
  fetch?: typeof fetch;
};

function errorFrom(status: number, body: unknown, notFound: AndroidSetupApiErrorCode) {
  const fields = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const description =
    typeof fields.error_description === 'string' ? fields.error_description : `HTTP ${status}`;
  const serials = Array.isArray(fields.serials)
    ? fields.serials.filter((serial): serial is string => typeof serial === 'string')
    : [];
  let code: AndroidSetupApiErrorCode = 'failed';
  if (status === 401) code = 'signed_out';
  else if (status === 403) code = 'forbidden';
  else if (status === 404) code = notFound;
  else if (status === 409) code = 'phone_not_ready';
  else if (status === 503)
    code = fields.error === 'adb_unavailable' ? 'adb_unavailable' : 'unavailable';
  return new AndroidSetupApiError(code, status, description, { serials });
}

async function callRoute(
  options: AndroidSetupApiOptions,
  path: string,
  body: unknown,
  notFound: AndroidSetupApiErrorCode,
): Promise<unknown> {
  const doFetch = options.fetch ?? fetch;
  let response: Response;
  try {
    response = await doFetch(`${options.mcpUrl.replace(/\/+$/, '')}/dashboard/android/${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        Accept: 'application/json',
        Authorization: `Bearer ${options.accessToken}`,
        ...(body !== undefined && { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
      cache: 'no-store',
    });
  } catch (cause) {
    throw new AndroidSetupApiError('unavailable', 0, 'The tool server could not be reached', {
      cause,
    });
  }
  const answer: unknown = await response.json().catch(() => null);
  if (!response.ok) throw errorFrom(response.status, answer, notFound);
  if (answer === null) throw new AndroidSetupApiError('failed', response.status, 'Not JSON');
  return answer;
}

/** GET /dashboard/android/devices; a 404 means this tool server has no adb configured. */
export async function listAdbPhones(options: AndroidSetupApiOptions): Promise<AdbPhone[]> {
  const body = (await callRoute(options, 'devices', undefined, 'not_configured')) as {
    devices?: AdbPhone[];
    adb_unavailable?: string;
  };
  if (typeof body.adb_unavailable === 'string') {
    throw new AndroidSetupApiError('adb_unavailable', 200, body.adb_unavailable);
  }
  return Array.isArray(body.devices) ? body.devices : [];
}

export async function connectAndroidPhone(
  options: AndroidSetupApiOptions & { deviceUuid: string; serial: string | null },
): Promise<AndroidConnectResult> {
  return (await callRoute(
    options,
    'connect',
    { device_uuid: options.deviceUuid, ...(options.serial && { serial: options.serial }) },
    'not_found',
  )) as AndroidConnectResult;
}

export async function revertAndroidPhone(
  options: AndroidSetupApiOptions & { deviceUuid: string; serial: string | null },
): Promise<AndroidRevertResult> {
  return (await callRoute(
    options,
    'revert',
    { device_uuid: options.deviceUuid, ...(options.serial && { serial: options.serial }) },
    'not_found',
  )) as AndroidRevertResult;
}
