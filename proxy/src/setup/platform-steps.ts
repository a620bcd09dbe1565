// Set-up steps per platform: install and trust the Capture CA, then point the device at its PAC
// URL (002 §4.4) or, without one, at the manual proxy (002 §4.3). Shared by the proxy's set-up
// page and the dashboard, so it stays pure: Vite bundles it into the browser app.

export type PlatformSteps = {
  id: string;
  name: string;
  certificate: 'pem' | 'der' | 'mobileconfig';
  steps: string[];
};

export type SetupLinks = {
  pacUrl: string | null;
  manualProxy: string;
  caDerUrl: string;
  caPemUrl: string;
  mobileconfigUrl: string | null;
};

export function platformSteps(links: SetupLinks): PlatformSteps[] {
  return [
    appleMobileSteps(links),
    androidSteps(links),
    macosSteps(links),
    windowsSteps(links),
    linuxSteps(links),
    chromeosSteps(links),
    firefoxSteps(links),
  ];
}

/** The PAC URL of a device port: the template's `{port}` replaced by the port. */
export function pacUrlFor(template: string, port: number): string {
  return template.replace('{port}', String(port));
}

function appleMobileSteps(links: SetupLinks): PlatformSteps {
  const { pacUrl, mobileconfigUrl } = links;
  const { host, port } = splitHostPort(links.manualProxy);
  const wifiProxy = 'Settings → Wi-Fi → (i) next to the network → Configure Proxy';
  return {
    id: 'ios',
    name: 'iOS / iPadOS',
    certificate: mobileconfigUrl ? 'mobileconfig' : 'der',
    steps: [
      `Open ${mobileconfigUrl ?? links.caDerUrl} in Safari and allow the profile download.`,
      'Settings → General → VPN & Device Management → Capture CA → Install.',
      // iOS trusts a root installed by hand for TLS only after this switch (iOS 10.3 and later).
      'Settings → General → About → Certificate Trust Settings → full trust for Capture CA: on.',
      pacUrl
        ? `${wifiProxy} → Automatic → URL ${pacUrl} → Save.`
        : `${wifiProxy} → Manual → Server ${host}, Port ${port} → Save.`,
    ],
  };
}

function androidSteps(links: SetupLinks): PlatformSteps {
  const { pacUrl } = links;
  const { host, port } = splitHostPort(links.manualProxy);
  const wifiProxy = 'Settings → Wi-Fi → the network → Edit → Advanced options → Proxy';
  return {
    id: 'android',
    name: 'Android',
    certificate: 'der',
    steps: [
      `Download ${links.caDerUrl} in the browser.`,
      'Settings → Security → Encryption & credentials → Install a certificate → CA certificate → ' +
        'Install anyway → the downloaded file (menu names vary by maker: search Settings for ' +
        '"CA certificate").',
      // Android 11 removed KeyChain.createInstallIntent for CA certificates.
      'Since Android 11 only Settings can install it: opening the file from an app does not.',
      'Apps trust user-installed CAs only when their network security config opts in; browsers ' +
        'such as Chrome do, so other apps may pass through without decryption.',
      pacUrl
        ? `${wifiProxy} → Proxy Auto-Config → PAC URL ${pacUrl} → Save.`
        : `${wifiProxy} → Manual → Proxy hostname ${host}, Proxy port ${port} → Save.`,
    ],
  };
}

function macosSteps(links: SetupLinks): PlatformSteps {
  const { pacUrl, mobileconfigUrl } = links;
  const { host, port } = splitHostPort(links.manualProxy);
  const proxies = 'System Settings → Network → the network → Details → Proxies';
  const certificateSteps = mobileconfigUrl
    ? [
        `Download ${mobileconfigUrl} and open it.`,
        'System Settings → General → Device Management (Privacy & Security → Profiles before ' +
          'macOS 15) → Capture CA → Install, with your password.',
        'Keychain Access → System → Capture CA → Trust: "When using this certificate" must read ' +
          'Always Trust; set it if it does not.',
      ]
    : [
        `Download ${links.caPemUrl} and open it: Keychain Access adds it to the login keychain.`,
        'Keychain Access → Capture CA → Trust → When using this certificate: Always Trust.',
      ];
  return {
    id: 'macos',
    name: 'macOS',
    certificate: mobileconfigUrl ? 'mobileconfig' : 'pem',
    steps: [
      ...certificateSteps,
      pacUrl
        ? `${proxies} → Automatic proxy configuration → URL ${pacUrl} → OK.`
        : `${proxies} → Web proxy (HTTP) and Secure web proxy (HTTPS) → Server ${host}, Port ` +
          `${port} → OK.`,
    ],
  };
}

function windowsSteps(links: SetupLinks): PlatformSteps {
  const { pacUrl } = links;
  const { host, port } = splitHostPort(links.manualProxy);
  const proxy = 'Settings → Network & internet → Proxy';
  return {
    id: 'windows',
    name: 'Windows',
    certificate: 'der',
    steps: [
      `Download ${links.caDerUrl}, open it → Install Certificate → Local Machine.`,
      'Place all certificates in the following store → Trusted Root Certification Authorities.',
      pacUrl
        ? `${proxy} → Use setup script → Set up → Script address ${pacUrl} → Save.`
        : `${proxy} → Manual proxy setup → Set up → Proxy IP address ${host}, Port ${port} → Save.`,
    ],
  };
}

function linuxSteps(links: SetupLinks): PlatformSteps {
  const { pacUrl, manualProxy } = links;
  const { host, port } = splitHostPort(manualProxy);
  const gnomeProxy = 'GNOME: Settings → Network → Network Proxy';
  return {
    id: 'linux',
    name: 'Linux',
    certificate: 'pem',
    steps: [
      `Download ${links.caPemUrl} as capture-ca.pem.`,
      'Debian/Ubuntu: sudo cp capture-ca.pem /usr/local/share/ca-certificates/capture-ca.crt ' +
        '&& sudo update-ca-certificates',
      'Fedora: sudo cp capture-ca.pem /etc/pki/ca-trust/source/anchors/ && sudo update-ca-trust',
      // Chrome and Chromium on Linux read trust from the user's NSS database, not /etc/ssl.
      'Chrome/Chromium: certutil -d sql:$HOME/.pki/nssdb -A -t C,, -n "Capture CA" ' +
        '-i capture-ca.pem',
      `Shell tools: export HTTP_PROXY=http://${manualProxy} HTTPS_PROXY=http://${manualProxy}`,
      pacUrl
        ? `${gnomeProxy} → Automatic → Configuration URL ${pacUrl}.`
        : `${gnomeProxy} → Manual → HTTP and HTTPS proxy ${host}, port ${port}.`,
    ],
  };
}

function chromeosSteps(links: SetupLinks): PlatformSteps {
  const { pacUrl } = links;
  const { host, port } = splitHostPort(links.manualProxy);
  const proxy = 'Settings → Network → Wi-Fi → the network → Proxy';
  return {
    id: 'chromeos',
    name: 'ChromeOS',
    certificate: 'der',
    steps: [
      `Download ${links.caDerUrl}.`,
      'Settings → Privacy and security → Security → Manage certificates → Authorities → Import ' +
        '→ the downloaded file.',
      'Tick "Trust this certificate for identifying websites" → OK.',
      'On a network another user added, first turn on Settings → Network → Allow proxies for ' +
        'shared networks.',
      pacUrl
        ? `${proxy} → Automatic proxy configuration → URL ${pacUrl}.`
        : `${proxy} → Manual proxy configuration → HTTP and HTTPS proxy ${host}, port ${port}.`,
    ],
  };
}

function firefoxSteps(links: SetupLinks): PlatformSteps {
  const { pacUrl } = links;
  const { host, port } = splitHostPort(links.manualProxy);
  const network = 'Settings → General → Network Settings → Settings…';
  return {
    id: 'firefox',
    name: 'Firefox',
    certificate: 'pem',
    steps: [
      `Download ${links.caPemUrl}. Firefox keeps its own trust store: Settings → Privacy & ` +
        'Security → Certificates → View Certificates → Authorities → Import → the downloaded file.',
      'Tick "Trust this CA to identify websites" → OK.',
      pacUrl
        ? `${network} → Automatic proxy configuration URL ${pacUrl} → OK.`
        : `${network} → Manual proxy configuration → HTTP Proxy ${host}, Port ${port}, tick ` +
          '"Also use this proxy for HTTPS" → OK.',
    ],
  };
}

/** Splits `host:port` (or `[v6]:port`) at its last colon; the brackets stay on an IPv6 host. */
function splitHostPort(hostPort: string): { host: string; port: string } {
  const colon = hostPort.lastIndexOf(':');
  if (colon === -1 || hostPort.endsWith(']')) return { host: hostPort, port: '' };
  return { host: hostPort.slice(0, colon), port: hostPort.slice(colon + 1) };
}
