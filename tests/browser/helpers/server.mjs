// Starts the repository's static server (demo/server.mjs) on a free loopback port for a test.
// With no options it serves the demo's allow-list; `{ root }` serves one folder (e.g. a built
// JupyterLite site); `{ mounts }` maps URL prefixes to folders.
import { startServer } from '../../../demo/server.mjs';

export async function startTestServer(options = {}) {
  // Port 0: the OS picks a free port, so parallel test files never collide.
  return startServer({ ...options, port: 0, host: '127.0.0.1' });
}
