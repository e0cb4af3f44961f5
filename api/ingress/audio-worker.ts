// The thread an uploaded file's parse runs on (api/ingress/audio-parser.ts): music-metadata spends
// CPU per container element, and here that CPU can be measured and the thread ended.
import { parentPort } from 'node:worker_threads';
import { isDomainError } from '../problems/domain.ts';
import { readAudioFileAt } from './audio-file.ts';
import type { ParseJob, ParseOutcome } from './audio-parser.ts';

parentPort!.on('message', (job: ParseJob) => {
  const post = (outcome: ParseOutcome) => parentPort!.postMessage(outcome);
  readAudioFileAt(job.path, job.size, job.mimeType, job.maxElements).then(
    (metadata) => post({ metadata }),
    (error: unknown) =>
      post(
        isDomainError(error)
          ? { refused: { code: error.code, detail: error.message, extra: error.extra } }
          : { failed: (error as Error).message ?? String(error) },
      ),
  );
});
