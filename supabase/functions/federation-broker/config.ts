// The broker's settings, read once from the function environment and validated (startup fails
// fast on a bad value). docs/federation.md lists each option.
// deno-lint-ignore no-import-prefix -- pinned npm: specifiers are the project's import rule
import { z } from 'npm:zod@4.6.7';

const environmentSchema = z.object({
  SUPABASE_URL: z.url(),
  SUPABASE_ANON_KEY: z.string().min(1),
  SUPABASE_SERVICE_ROLE_KEY: z.string().min(1),
  /** Armored OpenPGP private key that unseals HMAC secrets; local stacks fall back to a dev key. */
  FEDERATION_SECRET_KEY: z.string().optional(),
  /** Base of the companion app's universal links (000 §4.1 `{app_link_base}`). */
  FEDERATION_APP_LINK_BASE: z.url().default('http://127.0.0.1:54323'),
  /** Header carrying the client address, written by the trusted proxy in front of the broker. */
  FEDERATION_CLIENT_IP_HEADER: z.string().toLowerCase().default('x-forwarded-for'),
  /** How many proxies append to that header; the address is taken this many entries from the right. */
  FEDERATION_TRUSTED_PROXY_HOPS: z.coerce.number().int().min(1).max(10).default(1),
  /** How long an unknown JWKS kid waits before the key set is fetched again (jose cooldown). */
  FEDERATION_JWKS_COOLDOWN_MS: z.coerce.number().int().min(0).default(30_000),
  /** Local stacks only: honour x-federation-test-now (tests' injected clock). */
  FEDERATION_TEST_CLOCK: z.enum(['0', '1']).default('0'),
  /** Local stacks only: allow http:// partner URLs (loopback stand-ins in tests). */
  FEDERATION_ALLOW_HTTP_PARTNERS: z.enum(['0', '1']).default('0'),
});

export interface BrokerConfig {
  supabaseUrl: string;
  anonKey: string;
  serviceRoleKey: string;
  secretKey: string | undefined;
  appLinkBase: string;
  clientIpHeader: string;
  trustedProxyHops: number;
  jwksCooldownMs: number;
  /** True only when SUPABASE_URL is a loopback address: the local stack, never a hosted project. */
  isLocalStack: boolean;
  testClock: boolean;
  allowHttpPartners: boolean;
}

export function isLoopbackUrl(url: string): boolean {
  const host = new URL(url).hostname;
  return host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export function readConfig(environment: Record<string, string | undefined>): BrokerConfig {
  const env = environmentSchema.parse(environment);
  const isLocalStack = isLoopbackUrl(env.SUPABASE_URL);
  return {
    supabaseUrl: env.SUPABASE_URL.replace(/\/+$/, ''),
    anonKey: env.SUPABASE_ANON_KEY,
    serviceRoleKey: env.SUPABASE_SERVICE_ROLE_KEY,
    secretKey: env.FEDERATION_SECRET_KEY || undefined,
    appLinkBase: env.FEDERATION_APP_LINK_BASE.replace(/\/+$/, ''),
    clientIpHeader: env.FEDERATION_CLIENT_IP_HEADER,
    trustedProxyHops: env.FEDERATION_TRUSTED_PROXY_HOPS,
    jwksCooldownMs: env.FEDERATION_JWKS_COOLDOWN_MS,
    isLocalStack,
    // Test switches are ignored on anything but a loopback stack, whatever the secret says.
    testClock: isLocalStack && env.FEDERATION_TEST_CLOCK === '1',
    allowHttpPartners: isLocalStack && env.FEDERATION_ALLOW_HTTP_PARTNERS === '1',
  };
}
