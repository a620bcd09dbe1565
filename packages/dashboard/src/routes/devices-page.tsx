// `/devices`: the account's devices (every device for admins) with online state from last seen
// (150 s), adding and renaming (devices:edit), and for the selected device its PAC URL with a QR
// code, the CA download and set-up steps per platform, the manual proxy settings, and the
// certificate bundles that `/allocate` takes as credentials (docs/proxy.md).
import { type FormEvent, useEffect, useState } from 'react';
import { useAccess } from '../access.tsx';
import { can } from '../access-rules.ts';
import { useAppServices } from '../app-context.tsx';
import { QrCode } from '../components/qr-code.tsx';
import { AndroidUsbSetup } from '../console/android-usb-setup.tsx';
import { ConsoleShell } from '../console/console-shell.tsx';
import { pacUrlFor, platformSteps } from '../console/device-setup.ts';
import { type DeviceRow, useDevices } from '../console/devices-data.ts';
import { useNow } from '../console/live.ts';
import { isOnline } from '../console/online.ts';
import { formatDuration } from '../console/snapshots.ts';
import { navigate, useLocation } from '../router.ts';

const OS_CHOICES = ['android', 'ios', 'macos', 'windows', 'linux', 'other'] as const;

function seen(device: DeviceRow, now: number): string {
  if (!device.last_seen_at) return 'never seen';
  return `seen ${formatDuration((now - Date.parse(device.last_seen_at)) / 1000)} ago`;
}

function AddDeviceForm(props: { onAdded: (uuid: string) => void }) {
  const { supabase } = useAppServices();
  const [name, setName] = useState('');
  const [os, setOs] = useState<string>('android');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    const { data, error: insertError } = await supabase
      .from('devices')
      .insert({ name: name.trim(), os })
      .select('uuid')
      .single();
    setBusy(false);
    if (insertError) {
      setError(insertError.message);
      return;
    }
    setName('');
    props.onAdded((data as { uuid: string }).uuid);
  }
  return (
    <form className="toolbar" onSubmit={submit} aria-label="Add a device">
      <label>
        Device name
        <input
          required
          maxLength={200}
          value={name}
          onChange={(event) => setName(event.target.value)}
        />
      </label>
      <label>
        Platform
        <select value={os} onChange={(event) => setOs(event.target.value)}>
          {OS_CHOICES.map((choice) => (
            <option key={choice}>{choice}</option>
          ))}
        </select>
      </label>
      <button type="submit" disabled={busy || !name.trim()}>
        Add device
      </button>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}

function RenameCell(props: { device: DeviceRow; editable: boolean }) {
  const { supabase } = useAppServices();
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(props.device.name);
  const [error, setError] = useState<string | null>(null);
  if (!editing) {
    return (
      <>
        <span data-testid="device-name">{props.device.name}</span>
        {props.editable && (
          <button
            type="button"
            className="button--link"
            aria-label={`Rename ${props.device.name}`}
            onClick={() => {
              setName(props.device.name);
              setEditing(true);
            }}
          >
            Rename
          </button>
        )}
      </>
    );
  }
  async function save(event: FormEvent) {
    event.preventDefault();
    // Only the name changes: the port and PAC URL stay (002 §4.4).
    const { error: updateError } = await supabase
      .from('devices')
      .update({ name: name.trim() })
      .eq('uuid', props.device.uuid);
    if (updateError) setError(updateError.message);
    else setEditing(false);
  }
  return (
    <form onSubmit={save} className="toolbar">
      <label>
        New name
        <input
          required
          maxLength={200}
          value={name}
          onChange={(event) => setName(event.target.value)}
          onKeyDown={(event) => event.key === 'Escape' && setEditing(false)}
        />
      </label>
      <button type="submit" className="button--small">
        Save
      </button>
      {error && <span className="error">{error}</span>}
    </form>
  );
}

/**
 * The device's set-up link (docs/devices.md): a fresh token from `create_device_setup_link` for
 * callers who may edit the device; the phone that opens it is bound to the device's port. Null
 * while it loads, for viewers, and without a proxy.
 */
function useSetupLink(device: DeviceRow, editable: boolean): string | null {
  const { supabase, config } = useAppServices();
  const setupUrl = config.proxy?.setupUrl;
  const [link, setLink] = useState<string | null>(null);
  useEffect(() => {
    setLink(null);
    if (!editable || !setupUrl) return;
    let current = true;
    void supabase
      .rpc('create_device_setup_link', { device_uuid: device.uuid })
      .then(({ data, error }) => {
        if (current && !error) setLink(`${setupUrl}/setup/${(data as { token: string }).token}`);
      });
    return () => {
      current = false;
    };
  }, [supabase, setupUrl, device.uuid, editable]);
  return link;
}

function DeviceSetup(props: { device: DeviceRow; editable: boolean }) {
  const { config } = useAppServices();
  const proxy = config.proxy;
  const port = props.device.device_ports?.port ?? null;
  const pacUrl = proxy && port !== null ? pacUrlFor(proxy.pacUrlTemplate, port) : null;
  const setupLink = useSetupLink(props.device, props.editable);
  const [platform, setPlatform] = useState('android');
  if (!proxy) {
    return (
      <section className="panel" data-testid="device-setup">
        <h2>Set up {props.device.name}</h2>
        <p className="muted">This deployment has no capture proxy configured.</p>
      </section>
    );
  }
  const steps = platformSteps({
    pacUrl,
    manualProxy: proxy.manualProxy,
    caDerUrl: `${proxy.managementUrl}/ca.der`,
    caPemUrl: `${proxy.managementUrl}/ca.pem`,
    mobileconfigUrl: `${proxy.managementUrl}/ca.mobileconfig`,
  });
  const chosen = steps.find((item) => item.id === platform) ?? steps[0];
  return (
    <section
      className="panel device-setup"
      data-testid="device-setup"
      aria-labelledby="setup-heading"
    >
      <h2 id="setup-heading">Set up {props.device.name}</h2>
      {setupLink && (
        <>
          <p>
            Scan with the device's camera, or open on it:{' '}
            <a href={setupLink} data-testid="setup-link" rel="noreferrer">
              {setupLink}
            </a>{' '}
            (valid for 24 hours). The page gives it its proxy settings and the CA, binds this
            device's port to it, and turns green when its first request arrives.
          </p>
          <QrCode text={setupLink} label={`QR code of the set-up page of ${props.device.name}`} />
        </>
      )}
      {pacUrl ? (
        <>
          <p>
            PAC URL: <code data-testid="pac-url">{pacUrl}</code>
          </p>
          {!setupLink && (
            <QrCode text={pacUrl} label={`QR code of the PAC URL of ${props.device.name}`} />
          )}
        </>
      ) : (
        <p className="notice" data-testid="port-pending">
          No port yet: every device gets one from the pool the capture proxy registers, unless its
          account already holds its maximum of device ports or the pool is full (deleting a device
          frees its port). Meanwhile it can use the manual proxy below; this page shows the port as
          soon as it exists.
        </p>
      )}
      {props.editable && (
        <AndroidUsbSetup device={{ uuid: props.device.uuid, name: props.device.name }} />
      )}
      <h3>Manual proxy</h3>
      <p>
        HTTP and HTTPS proxy <code data-testid="manual-proxy">{proxy.manualProxy}</code> (clients
        behind one network share one identity this way; the PAC URL identifies the device).
      </p>
      <h3>CA certificate</h3>
      <p>
        <a href={`${proxy.managementUrl}/ca.pem`} data-testid="ca-pem" download="capture-ca.pem">
          Download PEM
        </a>{' '}
        ·{' '}
        <a href={`${proxy.managementUrl}/ca.der`} data-testid="ca-der" download="capture-ca.der">
          Download DER
        </a>
      </p>
      <label>
        Platform{' '}
        <select
          value={platform}
          onChange={(event) => setPlatform(event.target.value)}
          data-testid="platform-select"
        >
          {steps.map((item) => (
            <option key={item.id} value={item.id}>
              {item.name}
            </option>
          ))}
        </select>
      </label>
      {chosen && (
        <ol data-testid="platform-steps" data-platform={chosen.id}>
          <li>
            Use the{' '}
            {chosen.certificate === 'mobileconfig'
              ? 'configuration profile'
              : `${chosen.certificate.toUpperCase()} certificate`}
            .
          </li>
          {chosen.steps.map((step) => (
            <li key={step}>{step}</li>
          ))}
        </ol>
      )}
    </section>
  );
}

type Bundle = {
  id: string;
  label: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
};
type IssuedBundle = {
  bundle_id: string;
  username: string;
  password: string;
  ca_fingerprint_sha256: string;
};

function BundlesSection(props: { editable: boolean }) {
  const { supabase, config } = useAppServices();
  const [bundles, setBundles] = useState<Bundle[]>([]);
  const [issued, setIssued] = useState<IssuedBundle | null>(null);
  const [label, setLabel] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [generation, setGeneration] = useState(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: generation asks for a fresh read
  useEffect(() => {
    let current = true;
    void supabase
      .from('proxy_bundles')
      .select('id,label,created_at,last_used_at,revoked_at')
      .order('created_at', { ascending: false })
      .then(({ data, error: readError }) => {
        if (!current) return;
        if (readError) setError(readError.message);
        else setBundles((data ?? []) as Bundle[]);
      });
    return () => {
      current = false;
    };
  }, [supabase, generation]);
  async function issue(event: FormEvent) {
    event.preventDefault();
    const { data, error: rpcError } = await supabase.rpc('issue_proxy_bundle', {
      label: label.trim() || 'device bundle',
    });
    if (rpcError) {
      setError(rpcError.message);
      return;
    }
    setIssued(data as IssuedBundle);
    setLabel('');
    setGeneration((value) => value + 1);
  }
  async function revoke(id: string) {
    const { error: rpcError } = await supabase.rpc('revoke_proxy_bundle', { bundle_id: id });
    if (rpcError) setError(rpcError.message);
    setGeneration((value) => value + 1);
  }
  return (
    <section className="panel" data-testid="bundles-section" aria-labelledby="bundles-heading">
      <h2 id="bundles-heading">Certificate bundles</h2>
      <p className="muted">
        A bundle is the credential a device (or its app) sends to{' '}
        <code>{config.proxy?.managementUrl ?? '{proxy_url}'}/allocate</code> to get its port, and
        may send as proxy credentials on a shared network.
      </p>
      {error && <p className="error">{error}</p>}
      {props.editable && (
        <form className="toolbar" onSubmit={issue}>
          <label>
            Bundle label
            <input
              value={label}
              maxLength={100}
              onChange={(event) => setLabel(event.target.value)}
            />
          </label>
          <button type="submit">Issue bundle</button>
        </form>
      )}
      {issued && (
        <div className="notice" data-testid="issued-bundle" role="status">
          <p>Copy the password now: it is shown only once.</p>
          <dl className="facts">
            <dt>Username</dt>
            <dd data-testid="bundle-username">{issued.username}</dd>
            <dt>Password</dt>
            <dd data-testid="bundle-password">
              <code>{issued.password}</code>
            </dd>
            <dt>CA SHA-256</dt>
            <dd>
              <code>{issued.ca_fingerprint_sha256}</code>
            </dd>
          </dl>
        </div>
      )}
      <div className="table-wrap">
        <table className="table" data-testid="bundles-table">
          <thead>
            <tr>
              <th scope="col">Label</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">State</th>
              {props.editable && <th scope="col">Actions</th>}
            </tr>
          </thead>
          <tbody>
            {bundles.map((bundle) => (
              <tr key={bundle.id} data-id={bundle.id}>
                <td>{bundle.label}</td>
                <td>{new Date(bundle.created_at).toLocaleString()}</td>
                <td>
                  {bundle.last_used_at ? new Date(bundle.last_used_at).toLocaleString() : 'never'}
                </td>
                <td>{bundle.revoked_at ? 'revoked' : 'live'}</td>
                {props.editable && (
                  <td>
                    {!bundle.revoked_at && (
                      <button
                        type="button"
                        className="button--small button--secondary"
                        onClick={() => revoke(bundle.id)}
                      >
                        Revoke
                      </button>
                    )}
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function Devices() {
  const access = useAccess();
  const editable = can(access, 'devices', 'edit');
  const { devices, loaded, error } = useDevices();
  const now = useNow();
  // The selected device is in the path (`/devices/<uuid>`), so it can be linked to (the
  // assistant's "Data used" links are such paths).
  const { pathname } = useLocation();
  const selected = /^\/devices\/([0-9a-f-]{36})$/i.exec(pathname)?.[1] ?? null;
  const select = (uuid: string) => navigate(`/devices/${uuid}`);
  const device = devices.find((candidate) => candidate.uuid === selected) ?? devices[0];
  return (
    <>
      <h1>Devices</h1>
      {editable && <AddDeviceForm onAdded={select} />}
      {error && <p className="error">{error}</p>}
      <div className="split">
        <section className="panel" aria-label="Devices">
          <div className="table-wrap">
            <table className="table" data-testid="devices-table" data-loaded={loaded}>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">State</th>
                  <th scope="col" className="wide-only">
                    Platform
                  </th>
                  <th scope="col">Port</th>
                  <th scope="col" className="wide-only">
                    Connection
                  </th>
                  <th scope="col">Set-up</th>
                </tr>
              </thead>
              <tbody>
                {devices.map((row) => {
                  const online = isOnline(row, now);
                  return (
                    <tr
                      key={row.uuid}
                      data-uuid={row.uuid}
                      data-online={online}
                      aria-selected={row.uuid === device?.uuid}
                    >
                      <td>
                        <RenameCell device={row} editable={editable} />
                      </td>
                      <td className={online ? 'ok' : 'muted'} title={seen(row, now)}>
                        {online ? 'online' : 'offline'}
                        <span className="visually-hidden"> ({seen(row, now)})</span>
                      </td>
                      <td className="wide-only">{row.os}</td>
                      <td data-testid="device-port">{row.device_ports?.port ?? '–'}</td>
                      <td className="wide-only">{row.device_status?.source ?? 'unknown'}</td>
                      <td>
                        <button
                          type="button"
                          className="button--small button--secondary"
                          aria-label={`Set up ${row.name}`}
                          onClick={() => select(row.uuid)}
                        >
                          Set up
                        </button>
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
          {loaded && devices.length === 0 && <p className="muted">No devices yet.</p>}
        </section>
        {device && <DeviceSetup device={device} editable={editable} />}
      </div>
      <BundlesSection editable={editable} />
    </>
  );
}

export function DevicesPage() {
  return (
    <ConsoleShell>
      <Devices />
    </ConsoleShell>
  );
}
