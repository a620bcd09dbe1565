// The two Supabase APIs the broker calls with the service-role key: PostgREST RPCs and the Auth
// admin API. Plain fetch against {SUPABASE_URL}, so the same calls work on hosted Supabase.
import type { BrokerConfig } from './config.ts';

export class SupabaseApiError extends Error {
  readonly status: number;
  readonly errorCode: string | undefined;

  constructor(message: string, status: number, errorCode: string | undefined) {
    super(message);
    this.name = 'SupabaseApiError';
    this.status = status;
    this.errorCode = errorCode;
  }
}

export class SupabaseApi {
  private readonly config: BrokerConfig;

  constructor(config: BrokerConfig) {
    this.config = config;
  }

  /** POST /rest/v1/rpc/<name> as the service role. */
  rpc<T>(name: string, args: Record<string, unknown>): Promise<T> {
    return this.call<T>(`/rest/v1/rpc/${name}`, 'POST', args, this.config.serviceRoleKey);
  }

  /** A call to the Auth API; `key` is the service-role key for admin routes, else anon. */
  auth<T>(path: string, method: string, body: unknown, admin: boolean): Promise<T> {
    const key = admin ? this.config.serviceRoleKey : this.config.anonKey;
    return this.call<T>(`/auth/v1${path}`, method, body, key);
  }

  /** POST /auth/v1/logout?scope=local with a user's own access token: ends that one session. */
  async signOut(accessToken: string): Promise<void> {
    await this.call<unknown>(
      '/auth/v1/logout?scope=local',
      'POST',
      undefined,
      this.config.anonKey,
      accessToken,
    );
  }

  private async call<T>(
    path: string,
    method: string,
    body: unknown,
    key: string,
    bearer = key,
  ): Promise<T> {
    const response = await fetch(`${this.config.supabaseUrl}${path}`, {
      method,
      headers: {
        apikey: key,
        authorization: `Bearer ${bearer}`,
        'content-type': 'application/json',
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    const json = text ? JSON.parse(text) : null;
    if (!response.ok) {
      const errorCode = json?.error_code ?? json?.code ?? undefined;
      throw new SupabaseApiError(
        `${method} ${path} answered ${response.status}`,
        response.status,
        errorCode,
      );
    }
    return json as T;
  }
}
