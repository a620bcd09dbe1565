// What a tool is: its name, schemas (zod, published as JSON Schema), MCP annotations, the
// capability without which it is never listed nor run, an optional widget, and its run function.
// Tools read and write as the caller (Database.asCaller), never with the service role.
import type { ActingCaller, Approval, Farm } from '@capture/farm';
import type pg from 'pg';
import type { z } from 'zod';
import type { CallerTransaction } from '../store/database.ts';
import type { PoolLane } from '../store/pool-slots.ts';
import type { CallerProfile } from './caller-profile.ts';
import type { ToolError } from './tool-error.ts';

export interface Capability {
  section: string;
  action: 'view' | 'edit';
}

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/**
 * The Supabase Storage API as the caller: their own bearer token with the project's anon key, so
 * RLS on storage.objects decides what they may read. Never a service key.
 */
export interface CallerStorage {
  /** `{base_url}/storage/v1`. */
  url: string;
  apikey: string;
  accessToken: string;
}

/** What a running tool may use; a farm operation takes it as its ActingCaller. */
export interface ToolCall extends ActingCaller {
  caller: CallerProfile;
  /**
   * Runs `work` in one transaction as the caller (RLS and has_capability apply), its connection
   * taken in the given lane of the tool pool (standard unless given), read-only when asked.
   */
  asCaller<T>(work: (client: pg.PoolClient) => Promise<T>, options?: CallerTransaction): Promise<T>;
  /** Replaces secrets in captured traffic (shared with the assistant). */
  redact(payload: unknown): Promise<unknown>;
  /** The PAC URL of a device port, or null where the deployment has no proxy. */
  pacUrl(port: number): string | null;
  /** The farm, or null where this tool server has no farm (its tools are then unlisted). */
  farm: Farm | null;
  /** Storage as the caller, or null where this server has no anon key (supabaseAnonKey). */
  storage: CallerStorage | null;
  /**
   * A farm call a person approved: the approval the farm's gate answered, which the farm's
   * destructive operations demand (docs/farm.md "Gating").
   */
  approval?: Approval;
}

/** MCP image content (base64 data). */
export interface ImageBlock {
  data: string;
  mimeType: string;
}

export interface ToolDefinition<
  Input extends z.ZodObject = z.ZodObject,
  Output extends z.ZodObject = z.ZodObject,
> {
  name: string;
  title: string;
  description: string;
  input: Input;
  output: Output;
  annotations: ToolAnnotations;
  requires: Capability;
  /** The widget that shows this tool's result (MCP Apps), by name. */
  widget?: string;
  /**
   * Which share of the tool pool a call's queries wait in (docs/tool-server.md "Fair use"): the
   * search lane for calls on the expensive search path; standard when absent.
   */
  lane?(args: z.output<Input>): PoolLane;
  /** A farm tool: listed only where the farm is configured, and every call is audited. */
  farm?: boolean;
  /**
   * Destructive calls are confirm-gated (001 §4.1, docs/farm.md "Gating"): for arguments this
   * answers a plain description of what would run, the first call runs nothing and returns a
   * pending action, bound to the caller's grant, the tool and these exact arguments, that runs
   * once a person approves it; null runs at once.
   * `call` is for naming where it would run (the farm host), not for deciding.
   */
  confirm?(args: z.output<Input>, call: ToolCall): string | null;
  /**
   * Refuses a call before anything else happens, pending actions included (a capability one
   * action needs beyond the tool's own): answers the refusal, or null to go on.
   */
  refuse?(call: ToolCall, args: z.output<Input>): ToolError | null;
  /** Farm tools: argument names the audit keeps only as length and SHA-256 (typed text). */
  auditDigest?: readonly string[];
  /**
   * Binary parts of an output (a screenshot) sent as their own content blocks: answers the
   * output without them (still valid against `output`) and the blocks.
   */
  splitContent?(output: z.output<Output>): { output: z.output<Output>; images: ImageBlock[] };
  run(call: ToolCall, args: z.output<Input>): Promise<z.output<Output>>;
}

/** Keeps each definition's types while collecting them in one list. */
export function defineTool<Input extends z.ZodObject, Output extends z.ZodObject>(
  definition: ToolDefinition<Input, Output>,
): ToolDefinition {
  return definition as unknown as ToolDefinition;
}

export function capabilityName(capability: Capability): string {
  return `${capability.section}:${capability.action}`;
}
