// Set-up steps per platform for a device: install and trust the project CA, then point the device
// at its PAC URL (002 §4.4) or, where a platform has no PAC setting, the manual proxy (002 §4.3).

export type PlatformSteps = {
  id: string;
  name: string;
  certificate: 'pem' | 'der';
  steps: string[];
};

export function platformSteps(pacUrl: string | null, manualProxy: string): PlatformSteps[] {
  const proxyStep = pacUrl
    ? `Set the proxy to automatic configuration with the URL ${pacUrl}`
    : `Set the HTTP and HTTPS proxy to ${manualProxy}`;
  return [
    {
      id: 'ios',
      name: 'iOS / iPadOS',
      certificate: 'der',
      steps: [
        'Open the DER certificate link on the device in Safari and allow the profile download.',
        'Settings → General → VPN & Device Management → the downloaded profile → Install.',
        'Settings → General → About → Certificate Trust Settings → turn on full trust for the Capture CA.',
        `Settings → Wi-Fi → (i) of the network → Configure Proxy → Automatic → ${pacUrl ?? manualProxy}.`,
      ],
    },
    {
      id: 'android',
      name: 'Android',
      certificate: 'der',
      steps: [
        'Download the DER certificate on the device.',
        'Settings → Security → Encryption & credentials → Install a certificate → CA certificate.',
        'Apps trust user CAs only when they opt in (network security config); browsers and debug builds do.',
        `Settings → Wi-Fi → the network → Proxy → ${pacUrl ? 'Proxy Auto-Config' : 'Manual'} → ${pacUrl ?? manualProxy}.`,
      ],
    },
    {
      id: 'macos',
      name: 'macOS',
      certificate: 'pem',
      steps: [
        'Download the PEM certificate and open it: Keychain Access adds it to the login keychain.',
        'Open the certificate in Keychain Access → Trust → When using this certificate: Always Trust.',
        `System Settings → Network → the network → Details → Proxies → ${pacUrl ? 'Automatic proxy configuration' : 'Web and Secure web proxy'}: ${pacUrl ?? manualProxy}.`,
      ],
    },
    {
      id: 'windows',
      name: 'Windows',
      certificate: 'der',
      steps: [
        'Download the DER certificate, open it → Install Certificate → Local Machine.',
        'Place it in "Trusted Root Certification Authorities".',
        `Settings → Network & Internet → Proxy → ${pacUrl ? 'Use setup script' : 'Manual proxy setup'}: ${pacUrl ?? manualProxy}.`,
      ],
    },
    {
      id: 'linux',
      name: 'Linux',
      certificate: 'pem',
      steps: [
        'Debian/Ubuntu: sudo cp capture-ca.pem /usr/local/share/ca-certificates/capture-ca.crt && sudo update-ca-certificates',
        'Fedora: sudo cp capture-ca.pem /etc/pki/ca-trust/source/anchors/ && sudo update-ca-trust',
        `Shell tools: export HTTP_PROXY=http://${manualProxy} HTTPS_PROXY=http://${manualProxy}`,
        `${proxyStep} (GNOME: Settings → Network → Network Proxy).`,
      ],
    },
    {
      id: 'firefox',
      name: 'Firefox',
      certificate: 'pem',
      steps: [
        'Firefox keeps its own trust store: Settings → Privacy & Security → Certificates → View Certificates → Authorities → Import the PEM.',
        'Tick "Trust this CA to identify websites".',
        `Settings → Network Settings → ${pacUrl ? 'Automatic proxy configuration URL' : 'Manual proxy configuration'}: ${pacUrl ?? manualProxy}.`,
      ],
    },
  ];
}

export function pacUrlFor(template: string, port: number): string {
  return template.replace('{port}', String(port));
}
