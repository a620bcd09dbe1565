#!/usr/bin/env node
// The stack CLI's entry (docs/local-stack.md "CLI"): plain JavaScript, so an older Node than the
// pinned one gets a sentence instead of a TypeScript loader error, then the CLI itself
// (src/cli.ts).
const REQUIRED_MAJOR = 24;
const major = Number(process.versions.node.split('.')[0]);
if (major < REQUIRED_MAJOR) {
  console.error(
    `stack: Node ${REQUIRED_MAJOR} or newer is needed and this is Node ${process.versions.node}. ` +
      'Run it through npm (npm start, npm run stack -- <command>), which uses the Node the ' +
      'project pins after npm install, or put Node 24 first on your PATH.',
  );
  process.exit(1);
}
await import('../src/cli.ts');
