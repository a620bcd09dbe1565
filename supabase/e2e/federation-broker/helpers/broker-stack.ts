// A throwaway stack of this repo for the broker tests (temp data dir, free loopback ports), with
// the local-only test switches on and every log line kept so tests can search it; plus the
// helpers that onboard clients and call /start and /exchange.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { type RunningStack, startStack } from '@capture/stack';
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import pino from 'pino';
import { afterAll, beforeAll } from 'vitest';

export interface BrokerStack {
  stack: RunningStack;
  /** Every line the stack and its functions logged so far. */
  logs: string[];
  service: SupabaseClient;
  brokerUrl: string;
}

export async function startBrokerStack(): Promise<{
  fixture: BrokerStack;
  dispose(): Promise<void>;
}> {
  const dataDir = mkdtempSync(join(tmpdir(), 'federation-broker-test-'));
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const stack = await startStack({
    dataDir,
    ports: 'free',
    ephemeral: true,
    logger: pino({ level: 'info' }, sink),
    functionSecrets: {
      FEDERATION_TEST_CLOCK: '1',
      FEDERATION_ALLOW_HTTP_PARTNERS: '1',
      FEDERATION_JWKS_COOLDOWN_MS: '0',
    },
  });
  const service = createClient(stack.apiUrl, stack.keys.serviceRoleKey, {
    auth: { persistSession: false, autoRefreshToken: false },
  });
  return {
    fixture: { stack, logs, service, brokerUrl: `${stack.apiUrl}/functions/v1/federation-broker` },
    async dispose() {
      await stack.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** beforeAll/afterAll hooks giving the calling file its own stack. */
export function useBrokerStack(): () => BrokerStack {
  let running: Awaited<ReturnType<typeof startBrokerStack>> | undefined;
  beforeAll(async () => {
    running = await startBrokerStack();
  });
  afterAll(async () => {
    await running?.dispose();
  });
  return () => {
    if (!running) throw new Error('the broker stack is not started');
    return running.fixture;
  };
}

export interface ClientFields {
  client_id: string;
  verify_mode: 'backend_bearer' | 'hmac' | 'hosted_jwt';
  capped_role?: string;
  backend_base_url?: string;
  jwks_url?: string;
  issuer?: string;
  audience?: string;
  email_linking_trusted?: boolean;
  enabled?: boolean;
  mint_hmac_secret?: boolean;
  start_limit_per_minute?: number;
  exchange_limit_per_minute?: number;
  ip_limit_per_minute?: number;
  emails_verified_by_partner?: boolean;
  hmac_binds_challenge?: boolean;
}

/** Onboards a client as the service role; returns the answer (with hmac_secret when minted). */
export async function onboard(
  fixture: BrokerStack,
  fields: ClientFields,
): Promise<Record<string, unknown>> {
  const { data, error } = await fixture.service.rpc('upsert_federation_client', {
    client_name: fields.client_id,
    capped_role: 'member',
    ip_limit_per_minute: 100_000,
    mint_hmac_secret: fields.verify_mode === 'hmac',
    // The stand-in partners send e-mails without email_verified; they vouch for them.
    emails_verified_by_partner: true,
    confirm: true,
    ...fields,
  });
  if (error) throw new Error(`onboarding failed: ${error.message}`);
  return data as Record<string, unknown>;
}

export interface BrokerAnswer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

export async function callBroker(
  fixture: BrokerStack,
  route: string,
  body: unknown,
  options: { headers?: Record<string, string>; method?: string; at?: number } = {},
): Promise<BrokerAnswer> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    ...options.headers,
  };
  if (options.at !== undefined) headers['x-federation-test-now'] = String(options.at);
  const response = await fetch(`${fixture.brokerUrl}/${route}`, {
    method: options.method ?? 'POST',
    headers,
    body: options.method && options.method !== 'POST' ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : {} };
}

/** The code out of a /start link. */
export function codeOf(answer: BrokerAnswer): string {
  return new URL(String(answer.body.link)).searchParams.get('code') ?? '';
}
