// The settings the auth service runs with, derived once from supabase/config.toml [auth].
import type { ProjectConfig } from '../project-config.ts';

export interface AuthConfig {
  /** Public URL of the service (`<API_URL>/auth/v1`): the `iss` of access tokens. */
  externalUrl: string;
  siteUrl: string;
  redirectAllowList: string[];
  jwtSecret: string;
  jwtExpirySeconds: number;
  refreshTokenReuseIntervalSeconds: number;
  signupEnabled: boolean;
  anonymousSignInsEnabled: boolean;
  /** Without e-mail confirmation (the CLI's local default) sign-up signs the user in at once. */
  autoconfirm: boolean;
  minimumPasswordLength: number;
  otpLength: number;
  otpExpirySeconds: number;
  emailMaxFrequencySeconds: number;
  /** JWT `role` values allowed on /admin routes (GoTrue's GOTRUE_JWT_ADMIN_ROLES). */
  adminRoles: string[];
}

export function authConfigFrom(
  project: ProjectConfig,
  apiUrl: string,
  jwtSecret: string,
): AuthConfig {
  const auth = project.auth;
  return {
    externalUrl: `${apiUrl}/auth/v1`,
    siteUrl: auth.site_url,
    redirectAllowList: auth.additional_redirect_urls,
    jwtSecret,
    jwtExpirySeconds: auth.jwt_expiry,
    refreshTokenReuseIntervalSeconds: auth.refresh_token_reuse_interval,
    signupEnabled: auth.enable_signup && auth.email.enabled,
    anonymousSignInsEnabled: auth.enable_anonymous_sign_ins,
    autoconfirm: !auth.email.enable_confirmations,
    minimumPasswordLength: auth.minimum_password_length,
    otpLength: auth.email.otp_length,
    otpExpirySeconds: auth.email.otp_expiry,
    emailMaxFrequencySeconds: auth.email.max_frequency,
    adminRoles: ['service_role', 'supabase_admin'],
  };
}

/** GoTrue's glob (gobwas/glob with separators `.` and `/`): `*` stays within a label. */
function globToRegExp(pattern: string): RegExp {
  const body = pattern
    .split('**')
    .map((part) =>
      part
        .split('*')
        .map((literal) => literal.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('[^./]*'),
    )
    .join('.*');
  return new RegExp(`^${body}$`);
}

function sameOrigin(a: string, b: string): boolean {
  try {
    return new URL(a).origin === new URL(b).origin;
  } catch {
    return false;
  }
}

/** GoTrue accepts `redirect_to` only on the site URL's origin or the allow list; else the site URL. */
export function resolveRedirect(config: AuthConfig, requested: string | undefined | null): string {
  if (!requested) return config.siteUrl;
  if (sameOrigin(requested, config.siteUrl)) return requested;
  const allowed = config.redirectAllowList.some((pattern) => globToRegExp(pattern).test(requested));
  return allowed ? requested : config.siteUrl;
}
