// The set-up steps live with the proxy, whose own set-up page shows the same steps as this app.
export { type PlatformSteps, pacUrlFor, platformSteps } from '@capture/proxy/setup-steps';
