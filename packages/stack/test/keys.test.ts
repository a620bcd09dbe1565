import { describe, expect, it } from 'vitest';
import { createProjectKeys } from '../src/keys.ts';

describe('project keys', () => {
  it('reproduces the Supabase CLI well-known anon and service_role JWTs', async () => {
    const keys = await createProjectKeys();
    expect(keys.anonKey).toBe(
      'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJzdXBhYmFzZS1kZW1vIiwicm9sZSI6ImFub24iLCJleHAiOjE5ODM4MTI5OTZ9.CRXP1A7WOeoJeXxjNni43kdQwgnWNReilDMblYTn_I0',
    );
    expect(keys.serviceRoleKey).toBe(
      'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJzdXBhYmFzZS1kZW1vIiwicm9sZSI6InNlcnZpY2Vfcm9sZSIsImV4cCI6MTk4MzgxMjk5Nn0.EGIM96RAZx35lJzdJsyH-qQwv8Hdp7fsn3W0YpN81IU',
    );
    expect(keys.publishableKey).toMatch(/^sb_publishable_/);
    expect(keys.secretKey).toMatch(/^sb_secret_/);
  });
});
