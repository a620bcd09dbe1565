// Public surface of the local stack package.
export { type MailMessage, readMailbox } from './auth/mailbox.ts';
export { type DatabaseCheckReport, runDatabaseChecks } from './db-checks.ts';
export { StackError, type StackErrorCode } from './errors.ts';
export { createProjectKeys, type ProjectKeys } from './keys.ts';
export {
  REPO_ROOT,
  type RunningStack,
  type StackOptions,
  type StackPorts,
  startStack,
} from './stack.ts';
export type { StatusVariables } from './status-variables.ts';
