// The farm's security boundary (docs/farm.md): the one interface through which the tool server
// reaches the hosts that run sandboxed shells, headless browsers and attached Android devices for
// an agent. What the farm guarantees is kept behind it, in this package, so it is reviewed here.
import type { ActingCaller } from './acting-caller.ts';
import type { Approval } from './approval-gate.ts';
import type { FarmApps } from './apps/app-family.ts';
import type { BrowserAnswer, BrowserRequest } from './browser/browser-actions.ts';
import type { FarmCall, FarmCallRequest } from './farm-call.ts';
import type { ShellCommand, ShellRun } from './shell/run-shell.ts';

/**
 * The farm of this host, as startFarm() builds it. Its guarantees, whoever calls it:
 *
 * - **A person approves, never the agent** (001 §4.1, docs/farm.md "Gating"). A destructive
 *   operation (runShell, browse's `evaluate`, android install and uninstall) runs only with an
 *   Approval, and only FarmCall.gate() answers one: once a person approved exactly that call in
 *   the dashboard or through elicitation (the same user, the same OAuth grant, the same tool and
 *   arguments, before it expires, once). An approval made anywhere else is refused
 *   (`confirmation_required`) and nothing runs.
 * - **No record, no run** ("The audit"). FarmCall.run() writes the call's row of
 *   public.farm_audit before its work starts and completes it after; when the row cannot be
 *   written, the work never starts. Refusals and pending actions are rows too. Arguments are kept
 *   redacted (the shared redaction module, then the command-line credential rules), long or
 *   named ones by digest; of a result, only allow-listed fields.
 * - **Confinement** ("Shell", "Browser", "Android devices"). Shells, browsers and aapt run in
 *   bubblewrap: every namespace unshared, capabilities dropped, /usr read-only and nothing else of
 *   the host, size-capped tmpfs, rlimits, a memory cgroup each where one can be made, and their
 *   own unprivileged uid when the tool server is root. Their only network is the egress bridge to
 *   the caller's farm device on the capture proxy, so all they fetch is captured and the proxy's
 *   destination policy applies. adb and aapt run with argument arrays, never a host shell.
 * - **Ownership.** Farm devices, browser sessions and Android devices are found as the caller
 *   (RLS, and a session's OAuth grant): another caller's are as unknown as ones that never were.
 *   A browser session ends within 15 s of its grant, account or farm:edit going away.
 * - Failures are FarmErrors, from a closed set of codes.
 *
 * What it takes on trust from its caller, the tool server: that `caller` is who the verified
 * access token says (claims included); that the role, read afresh for each call, holds farm:edit
 * (checked at the start of each FarmCall, a refusal audited through it); that every farm tool
 * call goes through a FarmCall whose run() wraps the operations below; and that an operation is
 * handed the arguments its gate approved (an Approval binds the call, by the hash of its
 * arguments, but the operation does not hash them again).
 */
export interface Farm {
  /** This host's `farm.hostName`: where its devices are attached, named in what a person sees. */
  readonly hostName: string;
  /** The dashboard page where a person approves or denies (`{dashboard_url}/approvals`). */
  readonly approvalsUrl: string;
  /** Opens one farm tool call: its audit record, its gate and its recorded run. */
  openCall(request: FarmCallRequest): Promise<FarmCall>;
  /** farm_run_shell: one command in a fresh sandbox (destructive: needs the Approval). */
  runShell(
    call: ActingCaller,
    command: ShellCommand,
    approval: Approval | undefined,
  ): Promise<ShellRun>;
  /** browser_cdp: one action in the caller's session (`evaluate` needs the Approval). */
  browse(
    call: ActingCaller,
    request: BrowserRequest,
    approval: Approval | undefined,
  ): Promise<BrowserAnswer>;
  /** The `_install_app` family on this host's Android devices, over adb. */
  readonly android: FarmApps;
  /**
   * Server shutdown: kills every sandbox, browser and adb run in flight, and refuses new ones.
   */
  close(): Promise<void>;
}
