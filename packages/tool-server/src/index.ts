// The tool server package: start it in-process (the local stack, tests) or run src/cli.ts.
export { parseToolServerConfig, type ToolServerConfigInput } from './config.ts';
export { PRODUCT_NAME } from './oauth/metadata.ts';
export { DASHBOARD_SCOPE } from './oauth/scope.ts';
export { type RunningToolServer, startToolServer } from './tool-server.ts';
