// Parses `adb devices -l`: one line per attached device, as the adb server formats it
// (AOSP packages/modules/adb transport.cpp append_transport): the serial padded to 22 columns,
// the state, then `key:value` words (a USB path, product:, model:, device:, transport_id:).
// Pure, so it is tested on captured listings.

export interface AdbDevice {
  serial: string;
  /** `device` when usable; `unauthorized`, `offline`, `authorizing`, `no permissions`, ... */
  state: string;
  /** `model:` with adb's underscores turned back into spaces, when the phone reported one. */
  model: string | null;
}

/** What the set-up accepts as a serial: adb's USB serials and `host:port` of TCP devices. */
export const ADB_SERIAL = /^[A-Za-z0-9._:-]+$/;

/** The "no permissions" state spans words up to its `see [url]` hint (udev rules on Linux). */
const NO_PERMISSIONS = /^no permissions\b[^[]*(\[[^\]]*\])?/;

export function parseDeviceList(output: string): AdbDevice[] {
  const devices: AdbDevice[] = [];
  for (const line of output.split('\n')) {
    const match = /^(\S+)\s+(.*)$/.exec(line.trim());
    if (!match || line.startsWith('List of devices') || line.startsWith('* ')) continue;
    const serial = match[1] as string;
    const rest = match[2] as string;
    // adb prints "(no serial number)" for a device without one; the set-up cannot address it.
    if (!ADB_SERIAL.test(serial)) continue;
    const noPermissions = NO_PERMISSIONS.exec(rest);
    const state = noPermissions ? 'no permissions' : (rest.split(/\s+/)[0] as string);
    const words = (noPermissions ? rest.slice(noPermissions[0].length) : rest).split(/\s+/);
    const model = words.find((word) => word.startsWith('model:'))?.slice('model:'.length);
    devices.push({ serial, state, model: model ? model.replaceAll('_', ' ') : null });
  }
  return devices;
}
