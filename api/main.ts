import { loadConfig } from './config.ts';
import { startServer } from './server.ts';

// `npm start`: configuration from the environment, graceful stop on SIGTERM and SIGINT.
const running = await startServer(loadConfig());
const stop = async (signal: string) => {
  running.logger.info({ signal }, 'shutting down');
  await running.close();
  running.logger.info('stopped');
  process.exit(0);
};
process.once('SIGTERM', () => void stop('SIGTERM'));
process.once('SIGINT', () => void stop('SIGINT'));
