// The tool server package: start it in-process (the local stack, tests) or run src/cli.ts.
export type { ToolServerConfigInput } from './config.ts';
export { type RunningToolServer, startToolServer } from './tool-server.ts';
