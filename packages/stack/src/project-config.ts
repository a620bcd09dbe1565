// Reads the keys of supabase/config.toml that the local stack honours, validated once at start.
// Unknown keys are ignored (they belong to `supabase start`); known ones must be well-typed.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'smol-toml';
import { z } from 'zod';
import { StackError } from './errors.ts';
import { parseConfigSize } from './storage/storage-config.ts';

/** "1s", "60s", "5m" or a bare number of seconds, as the Supabase CLI accepts durations. */
const durationSeconds = z.union([
  z.number().nonnegative(),
  z
    .string()
    .regex(/^\d+(ms|s|m|h)$/)
    .transform((text) => {
      const [, amount, unit] = /^(\d+)(ms|s|m|h)$/.exec(text) ?? [];
      const factor = { ms: 0.001, s: 1, m: 60, h: 3600 }[unit as 'ms' | 's' | 'm' | 'h'];
      return Number(amount) * factor;
    }),
]);

const configSchema = z.object({
  project_id: z.string().default('local'),
  api: z
    .object({
      port: z.number().int().default(54321),
      schemas: z.array(z.string()).default(['public']),
      extra_search_path: z.array(z.string()).default(['public', 'extensions']),
      max_rows: z.number().int().positive().default(1000),
    })
    .prefault({}),
  db: z.object({ port: z.number().int().default(54322) }).prefault({}),
  auth: z
    .object({
      site_url: z.string().default('http://127.0.0.1:3000'),
      additional_redirect_urls: z.array(z.string()).default([]),
      jwt_expiry: z.number().int().positive().default(3600),
      enable_refresh_token_rotation: z.boolean().default(true),
      refresh_token_reuse_interval: z.number().int().nonnegative().default(10),
      enable_signup: z.boolean().default(true),
      enable_anonymous_sign_ins: z.boolean().default(false),
      minimum_password_length: z.number().int().min(6).default(6),
      email: z
        .object({
          enabled: z.boolean().default(true),
          enable_confirmations: z.boolean().default(false),
          double_confirm_changes: z.boolean().default(true),
          max_frequency: durationSeconds.default(1),
          otp_length: z.number().int().min(6).max(10).default(6),
          otp_expiry: z.number().int().positive().default(3600),
        })
        .prefault({}),
      // Per client address, token buckets as GoTrue keeps them (internal/api/apilimiter): the
      // Supabase CLI template's values are the defaults, as the CLI fills an absent section.
      rate_limit: z
        .object({
          email_sent: z.number().int().nonnegative().default(2),
          sms_sent: z.number().int().nonnegative().default(30),
          anonymous_users: z.number().int().nonnegative().default(30),
          token_refresh: z.number().int().nonnegative().default(150),
          sign_in_sign_ups: z.number().int().nonnegative().default(30),
          token_verifications: z.number().int().nonnegative().default(30),
          web3: z.number().int().nonnegative().default(30),
        })
        .prefault({}),
    })
    .prefault({}),
  // The Supabase CLI's [storage] section: whether /storage/v1 is served, and the largest upload
  // ("50MiB", units of 1024 as the CLI reads them, or a number of bytes).
  storage: z
    .object({
      enabled: z.boolean().default(true),
      file_size_limit: z
        .union([z.string(), z.number()])
        .default('50MiB')
        .transform((value, context) => {
          const bytes = parseConfigSize(value);
          if (bytes === undefined) {
            context.addIssue({ code: 'custom', message: `not a size: ${value}` });
            return z.NEVER;
          }
          return bytes;
        }),
    })
    .prefault({}),
  functions: z.record(z.string(), z.object({ verify_jwt: z.boolean().default(true) })).default({}),
  // The stack's capture proxy (docs/devices.md), a section of this project's own: `supabase start`
  // has no capture proxy and says "Unknown config field" for it, then goes on.
  capture_proxy: z
    .object({
      /** LAN mode: phones on this machine's network may use the proxy (`--lan`). */
      lan: z.boolean().default(false),
      /** The LAN address to serve on; default: the default route's (`--lan ADDRESS`). */
      lan_address: z.ipv4().optional(),
      /** Where the proxy may connect (PROXY_DESTINATIONS, `--proxy-destinations`). */
      destinations: z.array(z.string()).optional(),
    })
    .prefault({}),
});

export type ProjectConfig = z.infer<typeof configSchema>;

/** Loads `<projectDir>/supabase/config.toml`; a missing file means all defaults. */
export function loadProjectConfig(projectDir: string): ProjectConfig {
  const file = join(projectDir, 'supabase', 'config.toml');
  const raw = existsSync(file) ? parse(readFileSync(file, 'utf8')) : {};
  const result = configSchema.safeParse(raw);
  if (!result.success) {
    throw new StackError('bad_option', `${file}: ${z.prettifyError(result.error)}`);
  }
  return result.data;
}
