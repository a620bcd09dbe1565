// Reads an APK's identity with Debian's `aapt dump badging` before anything is installed: the
// `package:` line names the package, versionCode and versionName (aapt's Command.cpp doDump).
import type { AppIdentity } from '../apps/app-installer.ts';

/** Android's package name rule (PackageParser.validateName): two or more dot-separated segments. */
export const ANDROID_PACKAGE_NAME = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$/;

const PACKAGE_LINE =
  /^package: name='([^']*)'(?: versionCode='([^']*)')?(?: versionName='([^']*)')?/m;

/** The identity in aapt's output, or null when there is no valid `package:` line. */
export function parseBadging(output: string): AppIdentity | null {
  const line = PACKAGE_LINE.exec(output);
  const name = line?.[1];
  if (!line || !name || !ANDROID_PACKAGE_NAME.test(name)) return null;
  return {
    package: name,
    version_code: line[2] || null,
    version_name: line[3] || null,
  };
}
