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
  /**
   * `[auth.email] double_confirm_changes` (GoTrue's GOTRUE_MAILER_SECURE_EMAIL_CHANGE_ENABLED):
   * an address change needs the link or code sent to the current address as well as the new one.
   */
  doubleConfirmEmailChanges: boolean;
  minimumPasswordLength: number;
  otpLength: number;
  otpExpirySeconds: number;
  emailMaxFrequencySeconds: number;
  /** JWT `role` values allowed on /admin routes (GoTrue's GOTRUE_JWT_ADMIN_ROLES). */
  adminRoles: string[];
  /** `[auth.rate_limit]` buckets per client address; undefined turns them off (test stacks). */
  rateLimits: AuthRateLimits | undefined;
  /** Per-account defences against guessing, always on (docs/local-stack.md "Limits"). */
  guards: AccountGuards;
}

/** The `[auth.rate_limit]` values this service enforces (no SMS, Web3 or SMTP here). */
export type AuthRateLimits = Pick<
  ProjectConfig['auth']['rate_limit'],
  'anonymous_users' | 'token_refresh' | 'sign_in_sign_ups' | 'token_verifications'
>;

export interface AccountGuards {
  /** Wrong passwords for one account from one address before that pair is slowed down. */
  passwordFailuresPerAddress: number;
  /**
   * Wrong passwords for one account from addresses it has not signed in from, before those
   * addresses share one slowed-down gate (a spread-out guesser); familiar addresses never wait
   * on it, so a guesser cannot lock the owner out.
   */
  passwordFailuresFromStrangers: number;
  /** Once slowed, the wait between tries doubles from one second up to this. */
  passwordMaxDelaySeconds: number;
  /** Failures older than this are forgotten. */
  failureWindowSeconds: number;
  /** How long an address stays familiar to an account after a sign-in from it. */
  familiarAddressSeconds: number;
  /** Typed e-mail codes tried per account (any address) in five minutes, burst 30 as GoTrue's. */
  verificationsPerAccount: number;
  /** Wrong codes typed for one address before its outstanding e-mail code is burned. */
  wrongCodesBeforeBurn: number;
}

export const DEFAULT_ACCOUNT_GUARDS: AccountGuards = {
  passwordFailuresPerAddress: 5,
  passwordFailuresFromStrangers: 20,
  passwordMaxDelaySeconds: 60,
  failureWindowSeconds: 15 * 60,
  familiarAddressSeconds: 30 * 24 * 3600,
  verificationsPerAccount: 30,
  wrongCodesBeforeBurn: 5,
};

export function authConfigFrom(
  project: ProjectConfig,
  apiUrl: string,
  jwtSecret: string,
  rateLimits: 'config' | 'off' | Partial<AuthRateLimits> = 'config',
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
    doubleConfirmEmailChanges: auth.email.double_confirm_changes,
    minimumPasswordLength: auth.minimum_password_length,
    otpLength: auth.email.otp_length,
    otpExpirySeconds: auth.email.otp_expiry,
    emailMaxFrequencySeconds: auth.email.max_frequency,
    adminRoles: ['service_role', 'supabase_admin'],
    rateLimits:
      rateLimits === 'off'
        ? undefined
        : { ...auth.rate_limit, ...(rateLimits === 'config' ? {} : rateLimits) },
    guards: {
      ...DEFAULT_ACCOUNT_GUARDS,
      verificationsPerAccount: auth.rate_limit.token_verifications,
    },
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
