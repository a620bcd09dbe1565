// The `_install_app` family's platform-neutral shape (001 §4.1, docs/farm.md "Android devices"):
// what a farm platform (Android over adb today, iOS later) implements so the family's tools
// (`<platform>_install_app`, `_list_packages`, `_uninstall_app`) drive it without knowing how.

/** A package's identity as read from the package file before it is installed. */
export interface AppIdentity {
  /** Android package name, iOS bundle id. */
  package: string;
  /** Android versionCode, iOS CFBundleVersion; null when the file does not say. */
  version_code: string | null;
  /** Android versionName, iOS CFBundleShortVersionString. */
  version_name: string | null;
}

/** What the device's installer answered, verbatim enough to act on. */
export interface AppOutcome {
  ok: boolean;
  /** adb's "Success" or "Failure [REASON]", trimmed. */
  message: string;
  /** The failure's reason code (INSTALL_FAILED_ALREADY_EXISTS …), when the installer named one. */
  reason: string | null;
}

/** A device of the farm host, addressed by the id its platform's tooling uses (adb serial). */
export interface AppTarget {
  serial: string;
}

export type AppPackageFilter = 'third_party' | 'all';

export interface AppInstaller {
  /** The tools' name prefix and the devices.os they serve: 'android' (later 'ios'). */
  readonly platform: 'android' | 'ios';
  /** The package file's extension the installer takes ('.apk', later '.ipa'). */
  readonly fileExtension: string;
  /** Reads the identity of a package file, or throws AppPackageError when it is not one. */
  inspect(file: string): Promise<AppIdentity>;
  install(target: AppTarget, file: string, options: { replace: boolean }): Promise<AppOutcome>;
  listPackages(target: AppTarget, filter: AppPackageFilter): Promise<string[]>;
  uninstall(target: AppTarget, packageName: string): Promise<AppOutcome>;
}

/** A failure of the farm's device tooling itself (no server, device gone, timeout, bad file). */
export class AppInstallerError extends Error {
  readonly code: 'bad_package' | 'device_unavailable' | 'timeout' | 'tool_failed';

  constructor(code: AppInstallerError['code'], message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'AppInstallerError';
    this.code = code;
  }
}
