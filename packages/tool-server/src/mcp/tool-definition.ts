// What a tool is: its name, schemas (zod, published as JSON Schema), MCP annotations, the
// capability without which it is never listed nor run, an optional widget, and its run function.
// Tools read and write as the caller (Database.asCaller), never with the service role.
import type pg from 'pg';
import type { z } from 'zod';
import type { CallerProfile } from './caller-profile.ts';

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

/** What a running tool may use. */
export interface ToolCall {
  caller: CallerProfile;
  /** Runs `work` in one transaction as the caller (RLS and has_capability apply). */
  asCaller<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T>;
  /** Replaces secrets in captured traffic (shared with the assistant). */
  redact(payload: unknown): Promise<unknown>;
  /** The PAC URL of a device port, or null where the deployment has no proxy. */
  pacUrl(port: number): string | null;
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
