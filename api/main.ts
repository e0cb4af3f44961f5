import { loadConfig } from './config.ts';
import { startServer } from './server.ts';

// `npm start`: configuration from the environment, graceful stop on SIGTERM and SIGINT.
const running = await startServer(loadConfig());
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
