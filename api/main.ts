import { loadServerConfig } from './config.ts';
import { startServer, StartupError, type RunningServer } from './server.ts';

// `npm start`: configuration from the environment, graceful stop on SIGTERM and SIGINT.
let running: RunningServer;
try {
  running = await startServer(loadServerConfig());
} catch (error) {
  // A reason the operator can act on is one line, not a stack.
  if (!(error instanceof StartupError)) throw error;
  process.stderr.write(`agent-node cannot start: ${error.message}\n`);
  process.exit(1);
}
let stopping = false;
const stop = async (signal: string) => {
  // A repeated signal must not cut short the requests still in flight.
  if (stopping) return;
  stopping = true;
  running.logger.info({ signal }, 'shutting down');
  await running.close();
  running.logger.info('stopped');
  running.logger.flush(() => process.exit(0));
};
process.on('SIGTERM', () => void stop('SIGTERM'));
process.on('SIGINT', () => void stop('SIGINT'));
